/*
 * wire.h: the two encodings of the warden policy ABI (docs/abi.md) for a
 * freestanding C guest: a reader for hook inputs in the "warden flat"
 * layout (section 6) and a writer for hook outputs in the protobuf wire
 * format (section 7). No libc, no allocation.
 *
 * Reading. An input is a header and records of 8-byte slots, every integer
 * a little-endian u32. The reader checks every reference it follows against
 * the input's length, so no read ever leaves the input: a reference that
 * does not fit sets `in->err` (sticky) and reads as empty, and the guest
 * answers with an error output when it sees the flag. Strings are returned
 * as spans pointing into the input (zero copy).
 *
 *     input in;
 *     if (open_input(&in, buf, len, KIND_SERVERS) != FLAT_OK) ... malformed header
 *     rec root = root_record(&in, T_SERVERS_INPUT);
 *     rec thread = msg(&in, root, SI_THREAD, T_THREAD);
 *     span kind = str(&in, thread, TH_KIND);
 *     list servers = records(&in, root, SI_SERVERS, T_SERVER);
 *     for (uint32_t i = 0; i < servers.n; i++) {
 *         rec s = at(&in, servers, i);
 *         span name = str(&in, s, SV_NAME);
 *         ...
 *     }
 *     if (in.err) ... malformed: a reference outside the input
 *
 * Writing. A writer appends tag/value pairs to a caller-provided buffer. It
 * never writes past the buffer: when a value does not fit, it sets `full` and
 * ignores every later write, so the caller checks once at the end.
 *
 *     writer w = writer_of(buf, sizeof buf);
 *     uint32_t d = begin_message(&w, 1);    // ServersOutput.decisions
 *     put_string(&w, 1, name);              //   ServerDecision.name
 *     put_varint_field(&w, 2, 2);           //   ServerDecision.action = HIDE
 *     end_message(&w, d);
 *     if (w.full) ...
 */
#ifndef WARDEN_WIRE_H
#define WARDEN_WIRE_H

#include <stdint.h> /* a freestanding header: only typedefs */

/* ------------------------------------------------------------------ spans */

/* span is a view of bytes in guest memory: a string, a bytes value or an
 * encoded message. */
typedef struct {
	const uint8_t *ptr;
	uint32_t len;
} span;

/* LIT("abc") is the span of a string literal (without its NUL). */
#define LIT(s) ((span){(const uint8_t *)(s), (uint32_t)(sizeof(s) - 1)})

static int span_eq(span a, span b) {
	if (a.len != b.len) return 0;
	for (uint32_t i = 0; i < a.len; i++)
		if (a.ptr[i] != b.ptr[i]) return 0;
	return 1;
}

/* span_contains reports whether needle occurs in s (a plain scan: the
 * inputs are bounded by the host's input cap). */
static inline int span_contains(span s, span needle) {
	for (uint32_t i = 0; i <= s.len && needle.len <= s.len - i; i++) {
		if (span_eq((span){s.ptr + i, needle.len}, needle)) return 1;
	}
	return 0;
}

static int span_has_prefix(span s, span prefix) {
	if (s.len < prefix.len) return 0;
	return span_eq((span){s.ptr, prefix.len}, prefix);
}

/* ---------------------------------------------------- reading: the layout */

/* Header: u32s at these byte offsets, then the stride table. */
enum { H_MAGIC = 0, H_VERSION = 4, H_KIND = 8, H_ROOT = 12, H_NTYPES = 16, H_STRIDES = 20 };
#define FLAT_MAGIC 0x464E4457u /* "WDNF" */
#define FLAT_VERSION 1u

/* Message kinds: the hook bits (the last three: ABI version 2). */
enum { KIND_SERVERS = 1, KIND_CREDENTIALS = 2, KIND_TOOL_CALL = 4, KIND_RESOURCE_READ = 8, KIND_PROMPT_GET = 16, KIND_TOOL_RESULT = 32 };

/* Record types, slot numbers, flag bits and transport kinds: generated from
 * the ABI schema (abi/internal/abigen). */
#include "wire_gen.h"

/* ---------------------------------------------------- reading: the reader */

/* Results of open_input. */
enum { FLAT_OK = 0, FLAT_TRUNCATED, FLAT_MAGIC_BAD, FLAT_VERSION_BAD, FLAT_KIND_BAD, FLAT_STRIDE_BAD, FLAT_BOUNDS };

static const char *flat_error_text(int rc) {
	switch (rc) {
	case FLAT_TRUNCATED: return "unexpected end of input";
	case FLAT_MAGIC_BAD: return "not a warden flat input (bad magic)";
	case FLAT_VERSION_BAD: return "unsupported flat layout version";
	case FLAT_KIND_BAD: return "wrong message kind";
	case FLAT_STRIDE_BAD: return "record stride is not a positive multiple of 8";
	case FLAT_BOUNDS: return "reference past end of input";
	}
	return "malformed";
}

/* input is an opened input: its bytes, its stride table (0 for the types
 * its writer did not know) and the sticky error flag of the reads. */
typedef struct {
	const uint8_t *p;
	uint32_t len;
	uint32_t stride[NTYPES];
	uint32_t root;
	int err;
} input;

/* rec is a record: its type and the offset of its first byte; zero marks
 * the zero message (every slot reads as zero). */
typedef struct {
	uint32_t type, off;
	int zero;
} rec;

/* list is a list slot's target: n elements from offset off, records of
 * type (or string slots, type == T_STRING). */
#define T_STRING NTYPES
typedef struct {
	uint32_t type, off, n;
} list;

/* u32at reads the little-endian u32 at in->p[at]; callers have checked
 * at + 4 <= in->len. Byte by byte: the input need not be aligned. */
static uint32_t u32at(const input *in, uint32_t at) {
	const uint8_t *b = in->p + at;
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* fits reports whether n elements of size bytes from offset off lie inside
 * the input (64-bit arithmetic: no wrap-around). */
static int fits(const input *in, uint32_t off, uint32_t n, uint32_t size) {
	return (uint64_t)off + (uint64_t)n * size <= in->len;
}

/* open_input checks the header for a message of the given kind: magic,
 * version, kind, stride table (each stride a positive multiple of 8) and
 * the root record. */
/* root_type returns the record type of the root of an input of kind. */
static uint32_t root_type(uint32_t kind) {
	switch (kind) {
	case KIND_CREDENTIALS: return T_CREDENTIALS_INPUT;
	case KIND_TOOL_CALL: return T_TOOL_CALL_INPUT;
	case KIND_RESOURCE_READ: return T_RESOURCE_READ_INPUT;
	case KIND_PROMPT_GET: return T_PROMPT_GET_INPUT;
	case KIND_TOOL_RESULT: return T_TOOL_RESULT_INPUT;
	}
	return T_SERVERS_INPUT;
}

static int open_input(input *in, const uint8_t *p, uint32_t len, uint32_t kind) {
	*in = (input){p, len, {0}, 0, 0};
	if (len < H_STRIDES) return FLAT_TRUNCATED;
	if (u32at(in, H_MAGIC) != FLAT_MAGIC) return FLAT_MAGIC_BAD;
	if (u32at(in, H_VERSION) != FLAT_VERSION) return FLAT_VERSION_BAD;
	if (u32at(in, H_KIND) != kind) return FLAT_KIND_BAD;
	uint32_t n = u32at(in, H_NTYPES);
	if (!fits(in, H_STRIDES, n, 4)) return FLAT_TRUNCATED;
	for (uint32_t t = 0; t < n; t++) {
		uint32_t s = u32at(in, H_STRIDES + 4 * t);
		if (s == 0 || s % 8 != 0) return FLAT_STRIDE_BAD;
		if (t < NTYPES) in->stride[t] = s; /* types past ours: ignored */
	}
	in->root = u32at(in, H_ROOT);
	if (!fits(in, in->root, 1, in->stride[root_type(kind)])) return FLAT_BOUNDS;
	return FLAT_OK;
}

static rec root_record(const input *in, uint32_t type) { return (rec){type, in->root, 0}; }

/* slot reads slot k of record r as two u32s: zeros for the zero message and
 * for a slot past the record's stride (a field its writer did not know). */
static void slot(const input *in, rec r, uint32_t k, uint32_t *a, uint32_t *b) {
	*a = *b = 0;
	if (r.zero || 8 * k + 8 > in->stride[r.type]) return;
	/* the record was checked to lie inside the input */
	*a = u32at(in, r.off + 8 * k);
	*b = u32at(in, r.off + 8 * k + 4);
}

/* str reads string slot k of r. */
static span str(input *in, rec r, uint32_t k) {
	uint32_t off, n;
	slot(in, r, k, &off, &n);
	if (!fits(in, off, n, 1)) {
		in->err = 1;
		return (span){0, 0};
	}
	return (span){in->p + off, n};
}

/* flags reads the first u32 (half 0) or the second (half 1) of slot k. */
static uint32_t flags(const input *in, rec r, uint32_t k, int half) {
	uint32_t a, b;
	slot(in, r, k, &a, &b);
	return half ? b : a;
}

/* records reads list slot k of r, of records of type t; strings reads a
 * list of strings. The whole list must lie inside the input. */
static list records(input *in, rec r, uint32_t k, uint32_t t) {
	uint32_t off, n, size = t == T_STRING ? 8 : in->stride[t];
	slot(in, r, k, &off, &n);
	/* size is 0 only for a type the writer did not know: its list must be empty */
	if (!fits(in, off, n, size) || (size == 0 && n > 0)) {
		in->err = 1;
		return (list){t, 0, 0};
	}
	return (list){t, off, n};
}

static list strings(input *in, rec r, uint32_t k) { return records(in, r, k, T_STRING); }

/* at returns record i (< l.n) of a list of records. */
static rec at(const input *in, list l, uint32_t i) { return (rec){l.type, l.off + i * in->stride[l.type], 0}; }

/* str_at returns string i (< l.n) of a list of strings. */
static span str_at(input *in, list l, uint32_t i) {
	uint32_t slot = l.off + 8 * i; /* inside the input: the list was checked */
	uint32_t off = u32at(in, slot), n = u32at(in, slot + 4);
	if (!fits(in, off, n, 1)) {
		in->err = 1;
		return (span){0, 0};
	}
	return (span){in->p + off, n};
}

/* msg reads message slot k of r, of type t: count 0 is the zero message,
 * count 1 a record that must lie inside the input, other counts are
 * malformed. */
static rec msg(input *in, rec r, uint32_t k, uint32_t t) {
	uint32_t off, n;
	slot(in, r, k, &off, &n);
	/* stride 0: a type the writer did not know, so it cannot send one */
	if (n > 1 || !fits(in, off, n, in->stride[t]) || (in->stride[t] == 0 && n > 0)) {
		in->err = 1;
		n = 0;
	}
	return (rec){t, off, n == 0};
}

/* ---------------------------------------------------------------- writing */

/* Protobuf wire types used by the outputs. */
enum {
	WIRE_VARINT = 0, /* bool, enum, uint32 */
	WIRE_BYTES = 2,  /* string, bytes, embedded message */
};

/* writer appends to buf[0:cap); len is the encoded length so far. */
typedef struct {
	uint8_t *buf;
	uint32_t len, cap;
	int full; /* a write did not fit; the contents are incomplete */
} writer;

static writer writer_of(uint8_t *buf, uint32_t cap) { return (writer){buf, 0, cap, 0}; }

static int reserve(writer *w, uint32_t n) {
	if (w->full || n > w->cap - w->len) {
		w->full = 1;
		return 0;
	}
	return 1;
}

static uint32_t varint_size(uint64_t v) {
	uint32_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static void put_varint(writer *w, uint64_t v) {
	if (!reserve(w, varint_size(v))) return;
	while (v >= 0x80) {
		w->buf[w->len++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	w->buf[w->len++] = (uint8_t)v;
}

static void put_raw(writer *w, span s) {
	if (!reserve(w, s.len)) return;
	for (uint32_t i = 0; i < s.len; i++) w->buf[w->len++] = s.ptr[i];
}

static void put_tag(writer *w, uint32_t num, uint32_t wire) { put_varint(w, (uint64_t)num << 3 | wire); }

/* put_varint_field writes an enum, bool or uint32 field. */
static void put_varint_field(writer *w, uint32_t num, uint64_t v) {
	put_tag(w, num, WIRE_VARINT);
	put_varint(w, v);
}

/* put_string writes a string or bytes field. */
static void put_string(writer *w, uint32_t num, span s) {
	put_tag(w, num, WIRE_BYTES);
	put_varint(w, s.len);
	put_raw(w, s);
}

/* put_string2 writes a string field holding a followed by b (a reason such
 * as "denied by name: " + name) without a scratch buffer. */
static void put_string2(writer *w, uint32_t num, span a, span b) {
	put_tag(w, num, WIRE_BYTES);
	put_varint(w, (uint64_t)a.len + b.len);
	put_raw(w, a);
	put_raw(w, b);
}

/* begin_message starts an embedded message field: it writes the tag and a
 * one-byte length placeholder and returns the offset where the body starts,
 * to pass to end_message. */
static uint32_t begin_message(writer *w, uint32_t num) {
	put_tag(w, num, WIRE_BYTES);
	put_varint(w, 0);
	return w->len;
}

/* end_message patches the length of the message begun at body. A body of
 * 128 bytes or more needs a longer length: the body is moved right to make
 * room for it. */
static void end_message(writer *w, uint32_t body) {
	if (w->full) return;
	uint32_t n = w->len - body;
	uint32_t extra = varint_size(n) - 1;
	if (extra > 0) {
		if (!reserve(w, extra)) return;
		__builtin_memmove(w->buf + body + extra, w->buf + body, n); /* memory.copy */
		w->len += extra;
	}
	uint8_t *p = w->buf + body - 1; /* the placeholder byte */
	while (n >= 0x80) {
		*p++ = (uint8_t)(n | 0x80);
		n >>= 7;
	}
	*p = (uint8_t)n;
}

#endif /* WARDEN_WIRE_H */
