// Command abigen writes the code and tables of the warden policy ABI from
// its schema (schema.go): the Go message types, the flat layout's slot
// tables, writer, reader and views, the protobuf output encoders and
// decoders, the sdk's inline bodies, the C guest's layout header and the
// field tables of docs/abi.md (between marker comments). It is run from the
// abi directory by `go generate`:
//
//	go run ./internal/abigen [-root DIR]
//
// -root is the repository root (default ".."); the files are written under
// it. A run writes a file only when its contents change.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"strings"
)

// Msg is a message of the schema.
type Msg struct {
	Name      string
	Doc       string  // the Go type's doc comment
	Fields    []Field // in slot order (inputs) or field order (outputs)
	Prefix    string  // inputs: prefix of the slot constants (Go; upper-cased in C)
	View      string  // inputs: the view type (default Name+"View")
	ViewDoc   string  // inputs: the view type's doc comment
	Hook      string  // root records: the Hook constant
	HookName  string  // root records: the hook's name in the docs
	DocAfter  string  // docs/abi.md: after the record's heading
	ViewExtra []string
	ProtoNote string // docs/abi.md §8: a comment after the message
}

// Field is a field of a message.
type Field struct {
	Name     string // Go name
	Wire     string // snake_case name: docs, JSON (camelCase), error paths
	Type     string
	Num      int    // outputs: the protobuf field number
	Note     string // docs/abi.md (and Go comment) text
	Doc      string // inputs: the view accessor's doc comment
	Derived  string // inputs: computed by the writer from this Go field; not in the Go struct
	Resolved string // root records' messages: the Flat field holding its record offset
	Since    int    // outputs: the ABI version that added the field (0: version 1), which the notes say
	EnumMax  string // outputs: the largest value of the field's enum accepted here (default: the enum's Max)
}

// sinceNote is f's note, prefixed with the version that added the field
// when that is not version 1.
func (f Field) sinceNote() string {
	if f.Since < 2 {
		return f.Note
	}
	return fmt.Sprintf("v%d: %s", f.Since, f.Note)
}

// Enum is an output enum.
type Enum struct {
	Name, Max string
	Values    []string
}

// slot is a slot of a flat record.
type slot struct {
	kind  string // string, json, strings, list, message, flags
	off   int
	name  string // Go constant suffix
	wire  string
	elem  string  // list, message: the record type
	f     *Field  // the field (not for flags)
	bits  []Field // flags: the bool fields, bit i each
	b     *Field  // flags: the field of the second u32 (a TransportKind), or nil
	first bool    // flags: first flags slot of its record
}

func main() {
	root := flag.String("root", "..", "repository root")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, "abigen:", err)
		os.Exit(1)
	}
}

var errSchema = errors.New("schema")

func run(root string) error {
	g, err := newGen()
	if err != nil {
		return err
	}
	goFiles := map[string]func() string{
		"abi/types_gen.go":          g.types,
		"abi/layout_gen.go":         g.layout,
		"abi/flat_gen.go":           g.flat,
		"abi/view_gen.go":           g.views,
		"abi/proto_gen.go":          g.proto,
		"abi/abitest/schema_gen.go": g.abitest,
		"sdk/inline_gen.go":         g.inline,
	}
	for path, fn := range goFiles {
		src, err := format.Source([]byte(fn()))
		if err != nil {
			return fmt.Errorf("format %s: %w", path, err)
		}
		if err := write(filepath.Join(root, path), src); err != nil {
			return err
		}
	}
	if err := write(filepath.Join(root, "examples/conformance/c/wire_gen.h"), []byte(g.cHeader())); err != nil {
		return err
	}
	return g.docs(filepath.Join(root, "docs/abi.md"))
}

func write(path string, b []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
		return nil
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

type gen struct {
	in      []Msg
	typ     map[string]int      // record type index
	slots   map[string][]slot   // by record
	size    map[string]int      // record size
	enum    map[string]Enum     // output enums
	lists   map[string]bool     // record types used in lists
	methods map[string][]string // view methods by view type, in order (for sdk inline)
	order   []string            // view and list types, in order
}

func newGen() (*gen, error) {
	g := &gen{in: inputs, typ: map[string]int{}, slots: map[string][]slot{}, size: map[string]int{},
		enum: map[string]Enum{}, lists: map[string]bool{}, methods: map[string][]string{}}
	for i, m := range inputs {
		g.typ[m.Name] = i
	}
	for _, e := range enums {
		g.enum[e.Name] = e
	}
	for _, m := range inputs {
		var ss []slot
		prevBool := false
		for i := range m.Fields {
			f := &m.Fields[i]
			isBool := f.Type == "bool"
			switch {
			case isBool && prevBool:
				ss[len(ss)-1].bits = append(ss[len(ss)-1].bits, *f)
			case isBool:
				n := 0
				for _, s := range ss {
					if s.kind == "flags" {
						n++
					}
				}
				name := "Flags"
				if n > 0 {
					name = fmt.Sprintf("Flags%d", n+1)
				}
				ss = append(ss, slot{kind: "flags", name: name, wire: strings.ToLower(name), bits: []Field{*f}, first: n == 0})
			case f.Type == "TransportKind":
				if len(ss) == 0 || ss[len(ss)-1].kind != "flags" {
					return nil, fmt.Errorf("%w: %s.%s: a TransportKind must follow a bool", errSchema, m.Name, f.Name)
				}
				ss[len(ss)-1].b = f
			default:
				s := slot{name: f.Name, wire: f.Wire, f: f}
				switch t := f.Type; {
				case t == "string" || t == "json":
					s.kind = t
				case t == "[]string":
					s.kind = "strings"
				case strings.HasPrefix(t, "[]"):
					s.kind, s.elem = "list", t[2:]
					g.lists[s.elem] = true
				default:
					s.kind, s.elem = "message", t
					if f.Resolved == "" {
						return nil, fmt.Errorf("%w: %s.%s: a message field needs Resolved (only root records hold messages)", errSchema, m.Name, f.Name)
					}
				}
				if s.elem != "" {
					if _, ok := g.typ[s.elem]; !ok {
						return nil, fmt.Errorf("%w: %s.%s: unknown record type %s", errSchema, m.Name, f.Name, s.elem)
					}
				}
				ss = append(ss, s)
			}
			prevBool = isBool
		}
		for i := range ss {
			ss[i].off = 8 * i
		}
		g.slots[m.Name] = ss
		g.size[m.Name] = 8 * len(ss)
	}
	return g, nil
}

func (g *gen) viewName(m Msg) string {
	if m.View != "" {
		return m.View
	}
	return m.Name + "View"
}

// goType is the Go type of a field.
func goType(t string) string {
	if t == "json" {
		return "RawJSON"
	}
	return t
}

func camel(wire string) string {
	parts := strings.Split(wire, "_")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}

func upperSnake(name string) string {
	var b strings.Builder
	for i, r := range name {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

// plain is a docs/abi.md note as Go comment text.
func plain(note string) string {
	s := strings.TrimLeft(note, " :—")
	return strings.ReplaceAll(s, "`", "")
}

func comment(b *strings.Builder, doc string) {
	for _, l := range strings.Split(doc, "\n") {
		b.WriteString("// " + l + "\n")
	}
}

const header = "// Code generated by abigen (abi/internal/abigen) from its schema; DO NOT EDIT.\n\n"

// ---------------------------------------------------------------- types

func (g *gen) types() string {
	var b strings.Builder
	b.WriteString(header + "package abi\n\n")
	b.WriteString("// The message types of the ABI (docs/abi.md §6 for the inputs, §7 for the\n// outputs, whose field comments give the protobuf field number). Strings\n// decoded by Unmarshal are views into the decoded buffer: see the package\n// documentation.\n\n")
	for _, m := range append(append([]Msg{}, inputs...), outputs...) {
		comment(&b, m.Doc)
		fmt.Fprintf(&b, "type %s struct {\n", m.Name)
		for _, f := range m.Fields {
			if f.Derived != "" {
				continue
			}
			c := plain(f.sinceNote())
			if f.Num != 0 {
				c = strings.TrimSuffix(fmt.Sprintf("%d: %s", f.Num, c), ": ")
			}
			fmt.Fprintf(&b, "\t%s %s `json:\"%s,omitempty\"`", f.Name, goType(f.Type), camel(f.Wire))
			if c != "" {
				b.WriteString(" // " + c)
			}
			b.WriteString("\n")
		}
		b.WriteString("}\n\n")
	}
	return b.String()
}

// ---------------------------------------------------------------- layout

func (g *gen) slotConst(m Msg, s slot) string { return m.Prefix + s.name }
func (g *gen) bitConst(m Msg, f Field) string { return m.Prefix + "Flag" + f.Name }

func (g *gen) layout() string {
	var b strings.Builder
	b.WriteString(header + "package abi\n\n")
	b.WriteString("// Record types: the index of each type's stride in the header's stride\n// table. New types are only ever appended.\nconst (\n")
	for i, m := range inputs {
		if i == 0 {
			fmt.Fprintf(&b, "\ttype%s = iota\n", m.Name)
		} else {
			fmt.Fprintf(&b, "\ttype%s\n", m.Name)
		}
	}
	b.WriteString("\tnumTypes\n)\n\n")
	b.WriteString("// Slot byte offsets of each record type, its size (its stride as written\n// by this version) and the bits of its flags slots (docs/abi.md §6.3).\nconst (\n")
	for _, m := range inputs {
		fmt.Fprintf(&b, "\t// %s\n", m.Name)
		for _, s := range g.slots[m.Name] {
			fmt.Fprintf(&b, "\t%s = %d // %s\n", g.slotConst(m, s), s.off, g.kindText(s))
		}
		fmt.Fprintf(&b, "\tsize%s = %d\n", m.Name, g.size[m.Name])
		for _, s := range g.slots[m.Name] {
			for i, f := range s.bits {
				fmt.Fprintf(&b, "\t%s = %d\n", g.bitConst(m, f), 1<<i)
			}
		}
		b.WriteString("\n")
	}
	b.WriteString(")\n\n")
	b.WriteString("// knownSize is the record size of each type in this version: the stride the\n// writer uses, and the smallest stride the views read without copying.\nvar knownSize = [numTypes]uint32{\n")
	for _, m := range inputs {
		fmt.Fprintf(&b, "\ttype%s: size%s,\n", m.Name, m.Name)
	}
	b.WriteString("}\n\n// typeName names the record types in errors.\nvar typeName = [numTypes]string{")
	for i, m := range inputs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", m.Name)
	}
	b.WriteString("}\n\n// schema lists the slots of each record type in order, for relayout.\nvar schema = [numTypes][]slotDesc{\n")
	for _, m := range inputs {
		fmt.Fprintf(&b, "\ttype%s: {", m.Name)
		for i, s := range g.slots[m.Name] {
			if i > 0 {
				b.WriteString(", ")
			}
			elem := "0"
			if s.elem != "" {
				elem = "type" + s.elem
			}
			fmt.Fprintf(&b, "{%s, %s}", map[string]string{"string": "kString", "json": "kString", "strings": "kStrings", "list": "kList", "message": "kMessage", "flags": "kFlags"}[s.kind], elem)
		}
		b.WriteString("},\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// kindText is a slot's kind as docs/abi.md and the comments name it.
func (g *gen) kindText(s slot) string {
	switch s.kind {
	case "string":
		return "string"
	case "json":
		return "bytes"
	case "strings":
		return "list of string"
	case "list":
		return "list of " + s.elem
	case "message":
		return "message " + s.elem
	}
	return "flags"
}

// ---------------------------------------------------------------- flat writer and reader

func (g *gen) flat() string {
	var b strings.Builder
	b.WriteString(header + "package abi\n\nimport \"unsafe\"\n\n")
	b.WriteString("// The flat writer (AppendTo) of each record type, on the primitives of\n// flat.go, and the tables of the validating reader (Unmarshal: table.go).\n// Records are written depth first in slot order, strings in the same\n// order. The writers are straight-line code, not tables: they are on the\n// host's path of every hook call.\n\n")
	for _, m := range inputs {
		g.sizeFunc(&b, m)
		g.writeFunc(&b, m)
	}
	g.flatTable(&b)
	first := true
	for _, m := range inputs {
		if m.Hook == "" {
			continue
		}
		if first {
			b.WriteString(`// AppendTo appends the flat encoding of m (docs/abi.md §6) to b and returns
// the extended slice. Offsets inside the encoding are relative to its
// start, so the result's b[len(b):] is a complete input.
`)
		} else {
			fmt.Fprintf(&b, "// AppendTo appends the flat encoding of m to b; see %s.AppendTo.\n", inputs[0].Name)
		}
		fmt.Fprintf(&b, "func (m *%[1]s) AppendTo(b []byte) []byte {\n\tw := flatWriter{b: b}\n\tm.write(&w, w.root(%[2]s, size%[1]s, m))\n\treturn w.end()\n}\n\n", m.Name, m.Hook)
		if first {
			b.WriteString(`// Unmarshal decodes the flat input b (docs/abi.md §6) into m, checking every
// reference in it, and reusing m's slices. Strings and bytes are views into
// b, valid only while b is unchanged. Fields beyond a record's stride (an
// older writer) decode as zero values, slots beyond the known ones (a newer
// writer) are ignored. Malformed input returns an *InputError and never
// panics; m is then partially filled and must not be used.
//
// Unmarshal is the host-side (and test) decoder; a guest reads inputs in
// place with [Flat] and its views instead.
`)
		} else {
			fmt.Fprintf(&b, "// Unmarshal decodes the flat input b into m; see %s.Unmarshal.\n", inputs[0].Name)
		}
		first = false
		fmt.Fprintf(&b, "func (m *%[1]s) Unmarshal(b []byte) error { return unmarshalFlat(m, b, %[2]s) }\n\n", m.Name, m.Hook)
	}
	return b.String()
}

// flatTable writes flatFields: the fields of each record type, for the
// table-driven reader (table.go), one line per record type.
func (g *gen) flatTable(b *strings.Builder) {
	b.WriteString("// flatFields lists the fields of each record type, in slot order.\nvar flatFields = [numTypes][]flatField{\n")
	for _, m := range inputs {
		var es []string
		off := func(f Field) string { return fmt.Sprintf("unsafe.Offsetof(%s{}.%s)", m.Name, f.Name) }
		for _, s := range g.slots[m.Name] {
			c := g.slotConst(m, s)
			switch s.kind {
			case "string":
				if s.f.Derived != "" {
					es = append(es, fmt.Sprintf("{kind: fCheck, slot: %s, name: %q}", c, s.wire))
					continue
				}
				es = append(es, fmt.Sprintf("{kind: fString, slot: %s, off: %s, name: %q}", c, off(*s.f), s.wire))
			case "json":
				es = append(es, fmt.Sprintf("{kind: fBytes, slot: %s, off: %s, name: %q}", c, off(*s.f), s.wire))
			case "strings":
				es = append(es, fmt.Sprintf("{kind: fStrings, slot: %s, off: %s, name: %q}", c, off(*s.f), s.wire))
			case "list":
				es = append(es, fmt.Sprintf("{kind: fList, elem: type%s, slot: %s, off: %s, name: %q, ops: listOf[%s]()}", s.elem, c, off(*s.f), s.wire, s.elem))
			case "message":
				es = append(es, fmt.Sprintf("{kind: fMessage, elem: type%s, slot: %s, off: %s, name: %q, zero: zeroOf[%s]}", s.elem, c, off(*s.f), s.wire, s.elem))
			case "flags":
				for _, f := range s.bits {
					es = append(es, fmt.Sprintf("{kind: fBit, slot: %s, mask: %s, off: %s, name: %q}", c, g.bitConst(m, f), off(f), s.wire))
				}
			}
		}
		fmt.Fprintf(b, "\ttype%s: {%s},\n", m.Name, strings.Join(es, ", "))
	}
	b.WriteString("}\n\n")
}

func (g *gen) sizeFunc(b *strings.Builder, m Msg) {
	fmt.Fprintf(b, "// size returns the bytes of records below (not including) m's own record,\n// and of strings, that m needs.\nfunc (m *%s) size() (records, strs int) {\n", m.Name)
	for _, s := range g.slots[m.Name] {
		if s.f == nil || s.f.Derived != "" {
			continue
		}
		x := "m." + s.f.Name
		switch s.kind {
		case "string", "json":
			fmt.Fprintf(b, "\tstrs += len(%s)\n", x)
		case "strings":
			fmt.Fprintf(b, "\trecords, strs = records+8*len(%[1]s), strs+strsLen(%[1]s)\n", x)
		case "message":
			fmt.Fprintf(b, "\t{\n\t\tr, s := %s.size()\n\t\trecords, strs = records+size%s+r, strs+s\n\t}\n", x, s.elem)
		case "list":
			fmt.Fprintf(b, "\trecords += len(%[1]s) * size%[2]s\n\tfor i := range %[1]s {\n\t\tr, s := %[1]s[i].size()\n\t\trecords, strs = records+r, strs+s\n\t}\n", x, s.elem)
		}
	}
	b.WriteString("\treturn\n}\n\n")
}

func (g *gen) writeFunc(b *strings.Builder, m Msg) {
	fmt.Fprintf(b, "func (m *%s) write(w *flatWriter, at int) {\n", m.Name)
	derivedHost := map[string]slot{} // Go field -> the url-host slot derived from it
	for _, s := range g.slots[m.Name] {
		if s.f != nil && s.f.Derived != "" {
			derivedHost[s.f.Derived] = s
		}
	}
	for _, s := range g.slots[m.Name] {
		c := "at+" + g.slotConst(m, s)
		switch s.kind {
		case "string":
			if s.f.Derived != "" {
				continue // written with the field it derives from
			}
			if h, ok := derivedHost[s.f.Name]; ok {
				fmt.Fprintf(b, "\tif u := w.str(%[1]s, m.%[2]s); u != 0 {\n\t\tif i, j := urlHostSpan(m.%[2]s); j > i {\n\t\t\tw.ref(at+%[3]s, u+i, j-i)\n\t\t}\n\t}\n", c, s.f.Name, g.slotConst(m, h))
				continue
			}
			fmt.Fprintf(b, "\tw.str(%s, m.%s)\n", c, s.f.Name)
		case "json":
			fmt.Fprintf(b, "\tw.bytes(%s, m.%s)\n", c, s.f.Name)
		case "strings":
			fmt.Fprintf(b, "\tw.strs(%s, m.%s)\n", c, s.f.Name)
		case "message":
			fmt.Fprintf(b, "\tm.%s.write(w, w.msg(%s, size%s))\n", s.f.Name, c, s.elem)
		case "list":
			fmt.Fprintf(b, "\tif p := w.list(%[1]s, len(m.%[2]s), size%[3]s); p != 0 {\n\t\tfor i := range m.%[2]s {\n\t\t\tm.%[2]s[i].write(w, p+i*size%[3]s)\n\t\t}\n\t}\n", c, s.f.Name, s.elem)
		case "flags":
			b.WriteString("\t{\n\t\tvar f uint32\n")
			for _, f := range s.bits {
				fmt.Fprintf(b, "\t\tif m.%s {\n\t\t\tf |= %s\n\t\t}\n", f.Name, g.bitConst(m, f))
			}
			second := "0"
			if s.b != nil {
				second = fmt.Sprintf("uint32(TransportKindOf(m.%s))", s.b.Derived)
			}
			fmt.Fprintf(b, "\t\tw.put(%s, f, %s)\n\t}\n", c, second)
		}
	}
	b.WriteString("}\n\n")
}

// ---------------------------------------------------------------- views

func (g *gen) addView(typ, method string) {
	if _, ok := g.methods[typ]; !ok {
		g.order = append(g.order, typ)
	}
	g.methods[typ] = append(g.methods[typ], method)
}

func (g *gen) views() string {
	g.methods, g.order = map[string][]string{}, nil
	var b strings.Builder
	b.WriteString(header + "package abi\n\n")
	b.WriteString("// The views of each record type and the lists of records, on the\n// primitives of view.go. Every accessor is a few loads and inlines.\n\n")
	for _, m := range inputs {
		v := g.viewName(m)
		doc := m.ViewDoc
		if doc == "" {
			doc = fmt.Sprintf("%s is a view of a %s record.", v, m.Name)
		}
		comment(&b, doc)
		fmt.Fprintf(&b, "type %s struct {\n\tf *Flat\n\tr *[size%s]byte\n}\n\n", v, m.Name)
		for _, s := range g.slots[m.Name] {
			c := g.slotConst(m, s)
			if s.kind == "flags" {
				for _, f := range s.bits {
					comment(&b, f.Doc)
					fmt.Fprintf(&b, "func (v %s) %s() bool { return bit(v.r[%s:], %s) }\n\n", v, f.Name, c, g.bitConst(m, f))
					g.addView(v, f.Name)
				}
				if s.b != nil {
					comment(&b, s.b.Doc)
					fmt.Fprintf(&b, "func (v %s) %s() %s { return %s(ld32(v.r[%s+4:])) }\n\n", v, s.b.Name, s.b.Type, s.b.Type, c)
					g.addView(v, s.b.Name)
				}
				continue
			}
			comment(&b, s.f.Doc)
			switch s.kind {
			case "string":
				fmt.Fprintf(&b, "func (v %s) %s() string { return v.f.str(v.r[%s:]) }\n\n", v, s.f.Name, c)
			case "json":
				fmt.Fprintf(&b, "func (v %s) %s() []byte { return v.f.bytes(v.r[%s:]) }\n\n", v, s.f.Name, c)
			case "strings":
				fmt.Fprintf(&b, "func (v %s) %s() StringList { return StringList{v.f.list(v.r[%s:], 8)} }\n\n", v, s.f.Name, c)
			case "list":
				fmt.Fprintf(&b, "func (v %s) %s() %sList {\n\treturn %sList{v.f.list(v.r[%s:], v.f.strides[type%s])}\n}\n\n", v, s.f.Name, s.elem, s.elem, c, s.elem)
			case "message":
				ev := g.viewName(inputs[g.typ[s.elem]])
				fmt.Fprintf(&b, "func (v %[1]s) %[2]s() %[3]s {\n\treturn %[3]s{v.f, (*[size%[4]s]byte)(v.f.b[v.f.%[5]s : v.f.%[5]s+size%[4]s])}\n}\n\n", v, s.f.Name, ev, s.elem, s.f.Resolved)
			}
			g.addView(v, s.f.Name)
		}
		for _, x := range m.ViewExtra {
			g.addView(v, x)
		}
	}
	for _, m := range inputs {
		if !g.lists[m.Name] {
			continue
		}
		l, v := m.Name+"List", g.viewName(m)
		fmt.Fprintf(&b, `// %[1]s is a list of %[2]s records. At panics when i is out of range.
type %[1]s struct{ l list }

// Len returns the number of elements.
func (l %[1]s) Len() int { return int(l.l.n) }

// At returns element i.
func (l %[1]s) At(i int) %[3]s {
	return %[3]s{l.l.f, (*[size%[2]s]byte)(l.l.f.at(l.l.o, l.l.n, i, type%[2]s, size%[2]s))}
}

`, l, m.Name, v)
		g.addView(l, "Len")
		g.addView(l, "At")
	}
	// StringList is hand-written in view.go (its elements are slots, not records).
	for _, x := range []string{"Len", "At", "Contains"} {
		g.addView("StringList", x)
	}
	return b.String()
}

func (g *gen) inline() string {
	if g.order == nil {
		g.views()
	}
	var b strings.Builder
	b.WriteString(header + "package sdk\n\nimport \"github.com/warden-mcp/warden/abi\"\n\n")
	b.WriteString("// One function per method of every view and list type in abi: see inline.go.\n\n")
	b.WriteString("//lint:file-ignore U1000 the functions below are never called: they exist for their inline bodies\n")
	for _, t := range g.order {
		for _, x := range g.methods[t] {
			arg := ""
			switch {
			case x == "At":
				arg = "0"
			case x == "Contains":
				arg = `""`
			}
			fmt.Fprintf(&b, "func inl%s%s(x abi.%s) { _ = x.%s(%s) }\n", t, x, t, x, arg)
		}
	}
	return b.String()
}

// ---------------------------------------------------------------- outputs

func (g *gen) proto() string {
	var b strings.Builder
	b.WriteString(header + "package abi\n\nimport \"unsafe\"\n\n")
	b.WriteString("// The protobuf encoders of the outputs (docs/abi.md §7), on the primitives\n// of encode.go, and the tables of their decoder (table.go).\n\n")
	for k, m := range outputs {
		if same := sameEncoding(outputs[:k], m); same != "" {
			// The same fields (names, types, numbers): the same struct
			// layout, so the message converts to the earlier one.
			fmt.Fprintf(&b, "// AppendTo appends the wire encoding of m to b: that of a %[2]s.\nfunc (m *%[1]s) AppendTo(b []byte) []byte { return (*%[2]s)(m).AppendTo(b) }\n\n", m.Name, same)
			fmt.Fprintf(&b, "// Unmarshal decodes b into m, reusing m's slices: see decode.go.\nfunc (m *%[1]s) Unmarshal(b []byte) error {\n\treturn decodeMessage(b, &proto%[1]s, unsafe.Pointer(m))\n}\n\n", m.Name)
			continue
		}
		fmt.Fprintf(&b, "// AppendTo appends the wire encoding of m to b and returns the extended slice.\nfunc (m *%s) AppendTo(b []byte) []byte {\n", m.Name)
		for _, f := range m.Fields {
			bt, vt := fmt.Sprintf("%d<<3|wireBytes", f.Num), fmt.Sprintf("%d<<3|wireVarint", f.Num)
			switch t := f.Type; {
			case t == "string" || t == "json":
				fmt.Fprintf(&b, "\tb = appendField(b, %s, m.%s)\n", bt, f.Name)
			case t == "[]string":
				fmt.Fprintf(&b, "\tb = appendStrings(b, %s, m.%s)\n", bt, f.Name)
			case strings.HasPrefix(t, "[]"):
				fmt.Fprintf(&b, "\tb = appendMessages(b, %s, m.%s)\n", bt, f.Name)
			case t == "bool":
				fmt.Fprintf(&b, "\tb = appendBool(b, %s, m.%s)\n", vt, f.Name)
			case t == "uint32":
				fmt.Fprintf(&b, "\tb = appendUint(b, %s, uint64(m.%s))\n", vt, f.Name)
			default:
				fmt.Fprintf(&b, "\tb = appendUint(b, %s, uint64(int64(m.%s)))\n", vt, f.Name)
			}
		}
		b.WriteString("\treturn b\n}\n\n")

		fmt.Fprintf(&b, "// Unmarshal decodes b into m, reusing m's slices: see decode.go.\nfunc (m *%[1]s) Unmarshal(b []byte) error {\n\treturn decodeMessage(b, &proto%[1]s, unsafe.Pointer(m))\n}\n\n", m.Name)
	}
	b.WriteString("// The tables of the outputs' decoder (decodeMessage: table.go).\nvar (\n")
	for _, m := range outputs {
		var es []string
		for _, f := range m.Fields {
			bt, vt := fmt.Sprintf("%d<<3 | wireBytes", f.Num), fmt.Sprintf("%d<<3 | wireVarint", f.Num)
			off := fmt.Sprintf("unsafe.Offsetof(%s{}.%s)", m.Name, f.Name)
			switch t := f.Type; {
			case t == "string":
				es = append(es, fmt.Sprintf("{tag: %s, kind: pString, off: %s}", bt, off))
			case t == "json":
				es = append(es, fmt.Sprintf("{tag: %s, kind: pBytes, off: %s}", bt, off))
			case t == "[]string":
				es = append(es, fmt.Sprintf("{tag: %s, kind: pStrings, off: %s}", bt, off))
			case strings.HasPrefix(t, "[]"):
				es = append(es, fmt.Sprintf("{tag: %s, kind: pMessages, off: %s, elem: &proto%s, ops: listOf[%s]()}", bt, off, t[2:], t[2:]))
			case t == "bool":
				es = append(es, fmt.Sprintf("{tag: %s, kind: pBool, off: %s}", vt, off))
			case t == "uint32":
				es = append(es, fmt.Sprintf("{tag: %s, kind: pUint32, off: %s}", vt, off))
			default:
				e, ok := g.enum[t]
				if !ok {
					panic("abigen: unknown type " + t)
				}
				mx := e.Max
				if f.EnumMax != "" {
					mx = f.EnumMax
				}
				es = append(es, fmt.Sprintf("{tag: %s, kind: pEnum, max: uint64(%s), off: %s}", vt, mx, off))
			}
		}
		fmt.Fprintf(&b, "\tproto%[1]s = protoMsg{name: %[1]q, known: known%[1]s, fields: []protoField{%[2]s}}\n", m.Name, strings.Join(es, ", "))
	}
	b.WriteString(")\n\n")
	b.WriteString("// Known-field masks: bit n set = field n is defined (used by skip to tell a\n// wire type mismatch from an unknown field).\nconst (\n")
	for _, m := range outputs {
		var bits []string
		for _, f := range m.Fields {
			bits = append(bits, fmt.Sprintf("1<<%d", f.Num))
		}
		fmt.Fprintf(&b, "\tknown%s = %s\n", m.Name, strings.Join(bits, " | "))
	}
	b.WriteString(")\n")
	return b.String()
}

// sameEncoding returns the name of the first of earlier whose fields are
// those of m (names, types and numbers), or "".
func sameEncoding(earlier []Msg, m Msg) string {
	for _, e := range earlier {
		if len(e.Fields) != len(m.Fields) {
			continue
		}
		same := true
		for i, f := range e.Fields {
			g := m.Fields[i]
			same = same && f.Name == g.Name && f.Type == g.Type && f.Num == g.Num
		}
		if same {
			return e.Name
		}
	}
	return ""
}

// ---------------------------------------------------------------- abitest

func (g *gen) abitest() string {
	var b strings.Builder
	b.WriteString(header + "package abitest\n\n")
	b.WriteString("// Record type ids: the index of each type's stride in the header.\nconst (\n")
	for i, m := range inputs {
		if i == 0 {
			fmt.Fprintf(&b, "\tType%s = iota\n", m.Name)
		} else {
			fmt.Fprintf(&b, "\tType%s\n", m.Name)
		}
	}
	b.WriteString("\tNumTypes\n)\n\n// Schema lists the slots of each record type, in order (docs/abi.md §6).\nvar Schema = [NumTypes][]slotDesc{\n")
	for _, m := range inputs {
		fmt.Fprintf(&b, "\tType%s: {", m.Name)
		for i, s := range g.slots[m.Name] {
			if i > 0 {
				b.WriteString(", ")
			}
			switch s.kind {
			case "string", "json":
				b.WriteString("str")
			case "strings":
				b.WriteString("strl")
			case "flags":
				b.WriteString("flags")
			case "list":
				fmt.Fprintf(&b, "list(Type%s)", s.elem)
			case "message":
				fmt.Fprintf(&b, "msg(Type%s)", s.elem)
			}
		}
		b.WriteString("},\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// ---------------------------------------------------------------- C

func (g *gen) cHeader() string {
	var b strings.Builder
	b.WriteString("/* Code generated by abigen (abi/internal/abigen) from its schema; DO NOT EDIT. */\n\n")
	b.WriteString("/* wire_gen.h: the record types and slots of the warden flat layout\n * (docs/abi.md section 6.3), included by wire.h. */\n")
	b.WriteString("#ifndef WARDEN_WIRE_GEN_H\n#define WARDEN_WIRE_GEN_H\n\n")
	b.WriteString("/* Record types: indexes into the stride table. */\nenum {\n")
	for _, m := range inputs {
		fmt.Fprintf(&b, "\tT_%s,\n", upperSnake(m.Name))
	}
	b.WriteString("\tNTYPES\n};\n\n/* Slot numbers (slot k is at byte 8k of its record). */\n")
	for _, m := range inputs {
		p := strings.ToUpper(m.Prefix)
		var names []string
		for _, s := range g.slots[m.Name] {
			names = append(names, p+"_"+strings.ToUpper(s.wire))
		}
		fmt.Fprintf(&b, "enum { %s }; /* %s */\n", strings.Join(names, ", "), m.Name)
	}
	b.WriteString("\n/* Bits of the flags slots. */\n")
	for _, m := range inputs {
		p := strings.ToUpper(m.Prefix)
		for _, s := range g.slots[m.Name] {
			var names []string
			for i, f := range s.bits {
				names = append(names, fmt.Sprintf("%s_FLAG_%s = %d", p, strings.ToUpper(f.Wire), 1<<i))
			}
			if names != nil {
				fmt.Fprintf(&b, "enum { %s }; /* %s.%s */\n", strings.Join(names, ", "), m.Name, s.wire)
			}
		}
	}
	b.WriteString("\n/* Transport kinds: the second u32 of a Server's flags slot. */\nenum { ")
	for i, k := range transportKinds {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "TRANSPORT_%s = %d", k, i)
	}
	b.WriteString(" };\n\n#endif /* WARDEN_WIRE_GEN_H */\n")
	return b.String()
}

// ---------------------------------------------------------------- docs

func (g *gen) docStrides() string {
	var b strings.Builder
	b.WriteString("| t | type | stride |\n|---|---|---|\n")
	for i, m := range inputs {
		fmt.Fprintf(&b, "| %d | %s | %d |\n", i, m.Name, g.size[m.Name])
	}
	return b.String()
}

func (g *gen) docRecords() string {
	var b strings.Builder
	for i, m := range inputs {
		if i > 0 {
			b.WriteString("\n")
		}
		root := ""
		if m.HookName != "" {
			root = ", the root of the " + m.HookName + " hook"
		}
		fmt.Fprintf(&b, "**%s** (type %d%s)%s\n\n| slot | byte | field | kind |\n|---|---|---|---|\n", m.Name, i, root, m.DocAfter)
		for k, s := range g.slots[m.Name] {
			kind := g.kindText(s)
			if s.kind == "flags" {
				var bits []string
				for j, f := range s.bits {
					bits = append(bits, fmt.Sprintf("bit %d (`%d`) %s%s", j, 1<<j, f.Wire, f.Note))
				}
				second := "0"
				if s.b != nil {
					second = s.b.Note
				}
				kind = fmt.Sprintf("flags: %s; `b` = %s", strings.Join(bits, ", "), second)
			} else {
				kind += s.f.Note
			}
			fmt.Fprintf(&b, "| %d | %d | %s | %s |\n", k, s.off, s.wire, kind)
		}
	}
	return b.String()
}

func protoType(t string) string {
	switch t {
	case "json":
		return "bytes"
	case "[]string":
		return "repeated string"
	}
	if strings.HasPrefix(t, "[]") {
		return "repeated " + t[2:]
	}
	return t
}

func (g *gen) docInputProto() string {
	var b strings.Builder
	b.WriteString("```proto\n// Inputs: warden flat (§6). Listed in slot order.\n")
	for _, m := range inputs {
		fmt.Fprintf(&b, "message %s {\n", m.Name)
		for _, f := range m.Fields {
			fmt.Fprintf(&b, "  %s %s;\n", protoType(f.Type), f.Wire)
		}
		b.WriteString("}\n")
		if m.ProtoNote != "" {
			for _, l := range strings.Split(m.ProtoNote, "\n") {
				b.WriteString("// " + l + "\n")
			}
		}
	}
	b.WriteString("enum TransportKind { ")
	for i, k := range transportKinds {
		fmt.Fprintf(&b, "%s = %d; ", k, i)
	}
	b.WriteString("}\n```\n")
	return b.String()
}

func (g *gen) docOutputProto() string {
	var b strings.Builder
	b.WriteString("```proto\nsyntax = \"proto3\";\npackage warden.abi.v1;\n")
	done := map[string]bool{}
	for _, m := range outputs {
		for _, f := range m.Fields {
			if e, ok := g.enum[f.Type]; ok && !done[e.Name] {
				done[e.Name] = true
				fmt.Fprintf(&b, "\nenum %s { ", e.Name)
				for i, v := range e.Values {
					fmt.Fprintf(&b, "%s = %d; ", v, i)
				}
				b.WriteString("}\n")
			}
		}
		fmt.Fprintf(&b, "message %s {\n", m.Name)
		width := 0
		lines := make([]string, len(m.Fields))
		for i, f := range m.Fields {
			lines[i] = fmt.Sprintf("  %s %s = %d;", protoType(f.Type), f.Wire, f.Num)
			width = max(width, len(lines[i]))
		}
		for i, f := range m.Fields {
			if f.sinceNote() == "" {
				b.WriteString(lines[i] + "\n")
				continue
			}
			fmt.Fprintf(&b, "%-*s // %s\n", width, lines[i], f.sinceNote())
		}
		b.WriteString("}\n")
	}
	b.WriteString("```\n")
	return b.String()
}

// docs replaces the regions of docs/abi.md between
// "<!-- abigen:NAME -->" and "<!-- abigen:end -->" with the tables.
func (g *gen) docs(path string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	regions := map[string]string{
		"strides":       g.docStrides(),
		"records":       g.docRecords(),
		"input-schema":  g.docInputProto(),
		"output-schema": g.docOutputProto(),
	}
	s := string(old)
	var out strings.Builder
	seen := map[string]bool{}
	for {
		i := strings.Index(s, "<!-- abigen:")
		if i < 0 {
			out.WriteString(s)
			break
		}
		j := strings.Index(s[i:], "-->")
		if j < 0 {
			return fmt.Errorf("%s: unterminated marker", path)
		}
		name := strings.TrimSpace(s[i+len("<!-- abigen:") : i+j])
		body, ok := regions[name]
		if !ok {
			return fmt.Errorf("%s: unknown region %q", path, name)
		}
		seen[name] = true
		start := i + j + len("-->\n")
		end := strings.Index(s[start:], "<!-- abigen:end -->")
		if end < 0 {
			return fmt.Errorf("%s: region %q has no end marker", path, name)
		}
		out.WriteString(s[:start] + body)
		s = s[start+end:]
		out.WriteString("<!-- abigen:end -->")
		s = s[len("<!-- abigen:end -->"):]
	}
	for name := range regions {
		if !seen[name] {
			return fmt.Errorf("%s: region %q is missing", path, name)
		}
	}
	return write(path, []byte(out.String()))
}
