package interrupt

// Jump threading of the Go compiler's dispatch loop.
//
// Go's wasm backend compiles a function that has calls or branches into
// one loop holding a chain of blocks and a br_table on the "PC_B" local
// (its parameter 0), so that a goroutine can resume in the middle of the
// function after a stack switch:
//
//	loop $dispatch
//	  block $bN … block $b1 block $b0
//	    local.get $pc
//	    br_table $b0 $b1 … $bN   ;; by resume point
//	  end $b0  ;; code of segment 0
//	  …
//	end $bN    ;; code of segment N
//
// and every jump inside the function, forward or backward, into a
// set-and-dispatch:
//
//	i32.const K
//	local.set $pc
//	br $dispatch
//
// wazero compiles that as written: a jump to the loop's header, its
// interrupt check (added by this package), the br_table's bounds check and
// an indirect jump. When the block the br_table picks for K still encloses
// the br (the segment K comes after the jump: a forward jump), the br can
// name that block itself and land on the same instruction, and wazero
// compiles a direct jump. Instrument does that rewrite: it replaces the br's
// label and leaves the local.set (the resume logic may read $pc). Skipping
// the loop header's interrupt check is sound: a forward jump cannot repeat
// without passing a backward one, which still goes through the loop.
//
// The pattern is matched exactly: a loop with an empty block type, right
// after it a chain of blocks with empty block types, local.get of one
// local, then a br_table whose every label names a block of the chain; and
// a br to that loop right after `i32.const K; local.set` of the same local.
// Anything else is left alone.

// threader follows one function body for the pattern.
type threader struct {
	chainLoop int // the frame index of the loop that began the chain being read
	chainEnd  int // the body offset right after the chain's last instruction; -1: no chain
	loop      int // the frame index of the dispatch loop; -1: none open
	open      int // how many of its chain's blocks are still open (frames loop+1 … loop+open)
	local     uint32
	constAt   int // the last i32.const's offset, and the offset after it
	constEnd  int
}

func newThreader() threader { return threader{chainEnd: -1, loop: -1, constAt: -1, constEnd: -1} }

// onLoop notes a loop opened at body offset at (its block type ends at pc)
// as frame index f.
func (t *threader) onLoop(b []byte, at, pc, f int) {
	if t.loop < 0 && pc == at+2 && b[at+1] == 0x40 {
		t.chainLoop, t.chainEnd = f, pc
	}
}

// onBlock notes a block (not an if) opened at at.
func (t *threader) onBlock(b []byte, at, pc int) {
	if at == t.chainEnd && pc == at+2 && b[at+1] == 0x40 {
		t.chainEnd = pc
	}
}

// onBrTable checks whether the br_table at at, whose labels follow its
// count at b[countAt:], is the dispatch of the chain just read, with
// frames open frames; if so it records the frame each label names in
// targets.
func (t *threader) onBrTable(b []byte, at, countAt, frames int, targets []int) []int {
	if t.chainEnd < 0 || t.chainEnd >= at || b[t.chainEnd] != 0x20 {
		return targets
	}
	local, next, st := readU32(b, t.chainEnd+1)
	blocks := frames - 1 - t.chainLoop
	if st != lebOK || next != at || blocks < 1 {
		return targets
	}
	n, pc, _ := readU32(b, countAt)
	targets = targets[:0]
	for i := uint64(0); i <= uint64(n); i++ {
		var l uint32
		l, pc, st = readU32(b, pc)
		if st != lebOK || int(l) >= blocks {
			return targets[:0]
		}
		targets = append(targets, frames-1-int(l))
	}
	t.loop, t.open, t.local, t.chainEnd = t.chainLoop, blocks, local, -1
	return targets
}

// onEnd notes that frame f is closed.
func (t *threader) onEnd(f int) {
	switch {
	case t.loop < 0:
	case f == t.loop:
		t.loop = -1
	case f <= t.loop+t.open:
		t.open = f - t.loop - 1
	}
}

// branch returns the label that the br at at, whose label is l, can use
// instead, with frames open frames, or -1.
func (t *threader) branch(b []byte, at int, l uint32, frames int, targets []int) int {
	if t.loop < 0 || uint64(l) >= uint64(frames) || frames-1-int(l) != t.loop ||
		t.constEnd < 0 || t.constEnd >= at || b[t.constEnd] != 0x21 {
		return -1
	}
	local, next, st := readU32(b, t.constEnd+1)
	if st != lebOK || next != at || local != t.local {
		return -1
	}
	k, _, st := readS33(b, t.constAt+1)
	if st != lebOK {
		return -1
	}
	i := min(uint64(uint32(k)), uint64(len(targets)-1)) // past the labels: the default
	if f := targets[i]; f <= t.loop+t.open {
		return frames - 1 - f
	}
	return -1
}
