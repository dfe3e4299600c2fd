/*
 * wire.h: a minimal protobuf-wire reader and writer for warden policy guests
 * (ABI v1, docs/abi.md section 6). Freestanding: no libc, no allocation.
 *
 * Reading. A message is a span of bytes. A reader walks its fields one at a
 * time with next_field(), which checks every length against the end of the
 * span, so no read ever leaves the input. Strings and embedded messages are
 * returned as spans pointing into the input (zero copy).
 *
 *     reader r = reader_of(msg);
 *     field f;
 *     int rc;
 *     while ((rc = next_field(&r, &f)) == WIRE_OK) {
 *         if (f.num == 1 && f.wire == WIRE_BYTES) name = f.data;
 *     }
 *     if (rc < 0) ... malformed: rc is one of the WIRE_ERR_* codes
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

static int span_has_prefix(span s, span prefix) {
	if (s.len < prefix.len) return 0;
	return span_eq((span){s.ptr, prefix.len}, prefix);
}

/* ---------------------------------------------------------------- reading */

/* Wire types. 3 and 4 (groups), 6 and 7 are malformed in ABI v1. */
enum {
	WIRE_VARINT = 0,  /* bool, enum, uint32 */
	WIRE_FIXED64 = 1, /* unused by v1; skipped in unknown fields */
	WIRE_BYTES = 2,   /* string, bytes, embedded message */
	WIRE_FIXED32 = 5, /* unused by v1; skipped in unknown fields */
};

/* Results of next_field: WIRE_OK (a field was read), WIRE_END (no more
 * fields) or one of the negative errors. */
enum {
	WIRE_OK = 1,
	WIRE_END = 0,
	WIRE_ERR_TRUNCATED = -1, /* input ends inside a varint or fixed value */
	WIRE_ERR_OVERFLOW = -2,  /* varint longer than 10 bytes */
	WIRE_ERR_LENGTH = -3,    /* length past the end of the message */
	WIRE_ERR_WIRETYPE = -4,  /* wire type 3, 4, 6, 7, or wrong for a known field */
	WIRE_ERR_FIELDNUM = -5,  /* field number 0 or above 2^29-1 */
};

static const char *wire_error_text(int rc) {
	switch (rc) {
	case WIRE_ERR_TRUNCATED: return "unexpected end of input";
	case WIRE_ERR_OVERFLOW: return "varint longer than 10 bytes";
	case WIRE_ERR_LENGTH: return "length past end of input";
	case WIRE_ERR_WIRETYPE: return "wrong or unsupported wire type";
	case WIRE_ERR_FIELDNUM: return "invalid field number";
	}
	return "malformed";
}

#define WIRE_MAX_FIELD ((1u << 29) - 1)

/* reader walks the fields of one message: [p, end). */
typedef struct {
	const uint8_t *p, *end;
} reader;

static reader reader_of(span msg) { return (reader){msg.ptr, msg.ptr + msg.len}; }

/* field is one field as read by next_field. */
typedef struct {
	uint32_t num;   /* field number */
	uint32_t wire;  /* wire type */
	uint64_t value; /* WIRE_VARINT: the value */
	span data;      /* WIRE_BYTES: the payload (string, bytes, message) */
} field;

/* read_varint reads a base-128 varint: at most 10 bytes, the 10th at most 1. */
static int read_varint(reader *r, uint64_t *out) {
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end) return WIRE_ERR_TRUNCATED;
		uint8_t c = *r->p++;
		if (shift == 63 && c > 1) return WIRE_ERR_OVERFLOW;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (c < 0x80) {
			*out = v;
			return WIRE_OK;
		}
	}
	return WIRE_ERR_OVERFLOW; /* not reached: the 10th byte ends the loop */
}

/* next_field reads the next field of r into f. Fields of wire types 1 and 5
 * are stepped over (their value is not returned: v1 has none). */
static int next_field(reader *r, field *f) {
	if (r->p >= r->end) return WIRE_END;
	uint64_t tag, n;
	int rc = read_varint(r, &tag);
	if (rc < 0) return rc;
	if ((tag >> 3) == 0 || (tag >> 3) > WIRE_MAX_FIELD) return WIRE_ERR_FIELDNUM;
	f->num = (uint32_t)(tag >> 3);
	f->wire = (uint32_t)(tag & 7);
	f->value = 0;
	f->data = (span){0, 0};
	uint32_t left = (uint32_t)(r->end - r->p);
	switch (f->wire) {
	case WIRE_VARINT:
		return read_varint(r, &f->value);
	case WIRE_FIXED64:
		if (left < 8) return WIRE_ERR_TRUNCATED;
		r->p += 8;
		return WIRE_OK;
	case WIRE_FIXED32:
		if (left < 4) return WIRE_ERR_TRUNCATED;
		r->p += 4;
		return WIRE_OK;
	case WIRE_BYTES:
		if ((rc = read_varint(r, &n)) < 0) return rc;
		left = (uint32_t)(r->end - r->p);
		if (n > left) return WIRE_ERR_LENGTH; /* the bounds check that matters */
		f->data = (span){r->p, (uint32_t)n};
		r->p += n;
		return WIRE_OK;
	}
	return WIRE_ERR_WIRETYPE;
}

/* ---------------------------------------------------------------- writing */

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
