package interrupt

// Hand-assembled modules for what wat2wasm (wabt 1.0.32) cannot write:
// try_table, typed function references, and non-minimal encodings. Every
// function is () -> (i32) and exported as f0, f1, … (see simpleModule).

// ehModule uses exception handling (wazero:
// experimental.CoreFeaturesExceptionHandling): a tag section, try_table
// with every kind of catch clause, throw, throw_ref, and a loop inside a
// try_table.
func ehModule() []byte {
	// Types: 0 () -> (i32), every function; 1 (i32) -> (), the tag;
	// 2 () -> (i32 exnref), a block type.
	types := sec(1, vec(
		funcType(nil, []byte{0x7f}),
		funcType([]byte{0x7f}, nil),
		funcType(nil, []byte{0x7f, 0x69}),
	))
	tags := sec(13, vec([]byte{0x00, 0x01})) // tag 0: attribute 0, type 1
	bodies := [][]byte{
		// f0 = 7: a throw out of a loop, caught by (catch 0 0).
		fn(
			0x02, 0x7f, // block (result i32)
			0x1f, 0x40, 0x01, 0x00, 0x00, 0x00, // try_table (catch 0 0)
			0x03, 0x40, // loop
			0x41, 0x07, // i32.const 7
			0x08, 0x00, // throw 0
			0x0b,       // end loop
			0x0b,       // end try_table
			0x41, 0x00, // i32.const 0
			0x0b, // end block
			0x0b,
		),
		// f1 = 42: (catch_all 1) and (catch_all_ref 0); nothing is thrown.
		fn(
			0x02, 0x40, // block
			0x02, 0x69, // block (result exnref)
			0x1f, 0x40, 0x02, 0x02, 0x01, 0x03, 0x00, // try_table (catch_all 1) (catch_all_ref 0)
			0x0b,       // end try_table
			0x0c, 0x01, // br 1
			0x0b,       // end block
			0x0a,       // throw_ref
			0x0b,       // end block
			0x41, 0x2a, // i32.const 42
			0x0b,
		),
		// f2 = 9: (catch_ref 0 0) delivers the tag's i32 and an exnref.
		fn(
			0x02, 0x7f, // block (result i32)
			0x02, 0x02, // block (type 2) (result i32 exnref)
			0x1f, 0x40, 0x01, 0x01, 0x00, 0x00, // try_table (catch_ref 0 0)
			0x41, 0x09, // i32.const 9
			0x08, 0x00, // throw 0
			0x0b, // end try_table
			0x00, // unreachable
			0x0b, // end block
			0x1a, // drop
			0x0b, // end block
			0x0b,
		),
	}
	return moduleWithTypes(types, bodies, tags)
}

// typedRefsModule uses typed function references (wazero:
// experimental.CoreFeaturesTypedFunctionReferences, and
// CoreFeaturesTailCall for return_call_ref): call_ref, return_call_ref,
// ref.as_non_null, br_on_null, br_on_non_null, ref.null and block types and
// locals with a concrete heap type.
func typedRefsModule() []byte {
	bodies := [][]byte{
		// f0 = 42: call_ref of f1.
		fn(0xd2, 0x01, 0x14, 0x00, 0x0b),
		// f1 = 42.
		fn(0x41, 0x2a, 0x0b),
		// f2 = 5: br_on_null takes the null branch.
		fn(
			0x02, 0x7f, // block (result i32)
			0x41, 0x05, // i32.const 5
			0xd0, 0x00, // ref.null 0
			0xd5, 0x00, // br_on_null 0
			0x1a, 0x1a, // drop drop
			0x41, 0x06, // i32.const 6
			0x0b, 0x0b,
		),
		// f3 = 1: a block of type (ref null 0).
		fn(0x02, 0x63, 0x00, 0xd0, 0x00, 0x0b, 0xd1, 0x0b),
		// f4 = 1: a local of type (ref null 0). (Not select (result (ref
		// null 0)), which Instrument rejects: see TestErrors.)
		fnLocals(cat(leb(1), leb(1), []byte{0x63, 0x00}),
			0xd0, 0x00, // ref.null 0
			0x21, 0x00, // local.set 0
			0x20, 0x00, // local.get 0
			0xd1, // ref.is_null
			0x0b,
		),
		// f5 = 43: br_on_non_null carries (ref 0) out of a block of that type.
		fn(
			0x02, 0x64, 0x00, // block (result (ref 0))
			0xd2, 0x01, // ref.func 1
			0xd6, 0x00, // br_on_non_null 0
			0x00,       // unreachable
			0x0b,       // end
			0x14, 0x00, // call_ref 0
			0x41, 0x01, 0x6a, // i32.const 1; i32.add
			0x0b,
		),
		// f6 = 42: ref.as_non_null, then return_call_ref.
		fn(0xd2, 0x01, 0xd4, 0x15, 0x00, 0x0b),
	}
	return simpleModule(bodies)
}

// paddedModule uses non-minimal LEB128 encodings, which are valid and which
// wazero accepts: padded constants, indexes, labels, memargs, block types,
// a padded 0xfc sub-opcode, a two-byte SIMD sub-opcode (0xfd 0x80 0x01 is
// i16x8.abs) and a 10-byte i64.const. f0 = 3 + 0x07070707 + 0x00010001.
func paddedModule() []byte {
	global := sec(6, vec([]byte{0x7f, 0x00, 0x41, 0x03, 0x0b})) // (global i32 (i32.const 3))
	code := []byte{
		0x41, 0x80, 0x80, 0x80, 0x80, 0x00, // i32.const 0, in 5 bytes
		0x02, 0xc0, 0x7f, 0x0b, // block (empty block type in 2 bytes) end
		0x03, 0xc0, 0x7f, 0x0b, // loop (the same) end
		0x28, 0x82, 0x80, 0x80, 0x80, 0x00, 0x84, 0x80, 0x00, // i32.load align=2 offset=4
		0x23, 0x80, 0x80, 0x00, // global.get 0
		0x6a,                   // i32.add
		0x02, 0x40, 0x41, 0x00, // block; i32.const 0
		0x0e, 0x81, 0x00, 0x80, 0x00, 0x80, 0x80, 0x00, // br_table [0] 0
		0x0b,                               // end
		0x41, 0x00, 0x41, 0x07, 0x41, 0x04, // i32.const 0, 7, 4
		0xfc, 0x8b, 0x80, 0x00, 0x00, // memory.fill (sub-opcode 11 in 3 bytes)
		0x41, 0x00, 0x28, 0x02, 0x00, 0x6a, // i32.load (i32.const 0); i32.add
		0xfd, 0x0c, // v128.const
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xfd, 0x80, 0x01, // i16x8.abs
		0xfd, 0x1b, 0x00, // i32x4.extract_lane 0
		0x6a,                                                             // i32.add
		0x42, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, // i64.const 2^63-1
		0x1a, // drop
		0x0b,
	}
	return simpleModule([][]byte{fn(code...)}, global)
}

// moduleWithTypes is simpleModule with its own type section (type 0 must be
// () -> (i32)).
func moduleWithTypes(types []byte, bodies [][]byte, extra ...[]byte) []byte {
	m := simpleModule(bodies, extra...)
	// Replace simpleModule's type section (right after the header).
	old := sec(1, vec(funcType(nil, []byte{0x7f})))
	return cat(header, types, m[len(header)+len(old):])
}
