/*
 * policy.c: the warden conformance policy as a freestanding C guest.
 *
 * This is a complete warden policy plugin (ABI v1, docs/abi.md) in plain C
 * with no libc and no WASI: the module's only import is warden.log. It
 * implements exactly the same policy as ../go/main.go, and the tests in
 * host/policytest/conformance_test.go check that both give the same answers
 * to the fixtures in ../tests. Build it with ./build.sh.
 *
 * Layout of the module:
 *
 *   1. ABI glue: warden_abi_version, warden_hooks, warden_alloc, the output
 *      buffer and the hook entry points' common checks.
 *   2. The schema of the input messages, and validate(), which checks a
 *      whole input as strictly as the host's Go decoder does.
 *   3. Field getters over validated messages.
 *   4. The policy: the three hooks.
 *
 * Memory: the stack comes first (-Wl,--stack-first, so that an overflow
 * traps instead of overwriting data), then static data; the input buffer
 * starts at __heap_base, the end of everything the linker placed, and grows
 * in place with memory.grow. The output goes to a static
 * buffer; an output that does not fit is reported as an error (the host
 * then fails closed), never truncated.
 */
#include <stdint.h>

#include "wire.h"

#define EXPORT(name) __attribute__((export_name(name)))

/* ================================================================ 1. ABI */

/* warden.log(level, ptr, len): the only import. */
__attribute__((import_module("warden"), import_name("log")))
void warden_log(int32_t level, const uint8_t *msg, uint32_t len);

enum { LOG_TRACE = 1, LOG_DEBUG = 2, LOG_INFO = 3, LOG_WARN = 4, LOG_ERROR = 5 };

static void log_span(int32_t level, span msg) { warden_log(level, msg.ptr, msg.len); }

enum { HOOK_SERVERS = 1, HOOK_CREDENTIALS = 2, HOOK_TOOL_CALL = 4 };

EXPORT("warden_abi_version") int32_t warden_abi_version(void) { return 1; }

EXPORT("warden_hooks") int32_t warden_hooks(void) { return HOOK_SERVERS | HOOK_CREDENTIALS | HOOK_TOOL_CALL; }

/* ---- input buffer: [__heap_base, __heap_base + in_cap) ---------------- */

extern uint8_t __heap_base; /* defined by wasm-ld: first free byte */

#define PAGE 65536u

static uint32_t in_cap; /* bytes usable at __heap_base; 0 before the first alloc */

/* warden_alloc returns a buffer of at least size bytes for the next input.
 * There is only ever one buffer, at __heap_base, so growing it is just
 * growing the memory behind it. */
EXPORT("warden_alloc") uint32_t warden_alloc(uint32_t size) {
	uint32_t base = (uint32_t)(uintptr_t)&__heap_base;
	uint64_t have = (uint64_t)__builtin_wasm_memory_size(0) * PAGE;
	uint64_t need = (uint64_t)base + size;
	if (need > have) {
		uint64_t pages = (need - have + PAGE - 1) / PAGE;
		if (pages > 65536 || __builtin_wasm_memory_grow(0, (uint32_t)pages) == (__SIZE_TYPE__)-1)
			return 0; /* out of memory: the host fails closed */
		have += pages * PAGE;
	}
	in_cap = (uint32_t)(have - base);
	return base;
}

/* input_span checks that a hook's (ptr, len) lies in the alloc buffer. */
static int input_span(uint32_t ptr, uint32_t len, span *in) {
	uint32_t base = (uint32_t)(uintptr_t)&__heap_base;
	if (len == 0) {
		*in = (span){0, 0};
		return 1;
	}
	if (ptr < base || len > in_cap || ptr - base > in_cap - len) return 0;
	*in = (span){(const uint8_t *)(uintptr_t)ptr, len};
	return 1;
}

/* ---- output buffer ------------------------------------------------------ */

#define OUT_CAP 65536u
static uint8_t out_buf[OUT_CAP];

/* Field 15 is `error` in every output message. */
#define FIELD_ERROR 15

/* finish returns the hook result (out_ptr << 32 | out_len) for w. An output
 * that did not fit becomes an error output. */
static uint64_t finish(writer *w) {
	if (w->full) {
		*w = writer_of(out_buf, OUT_CAP);
		put_string(w, FIELD_ERROR, LIT("conformance: output larger than the 65536-byte output buffer"));
	}
	if (w->len == 0) return 0; /* empty output: no opinion */
	return (uint64_t)(uintptr_t)w->buf << 32 | w->len;
}

/* fail returns an output holding only error = a + b. */
static uint64_t fail(span a, span b) {
	writer w = writer_of(out_buf, OUT_CAP);
	put_string2(&w, FIELD_ERROR, a, b);
	return finish(&w);
}

/* ============================================================= 2. schema */

/*
 * The input messages, field by field (docs/abi.md section 8). validate()
 * walks an input with them so that malformed input is rejected up front,
 * exactly where the host's Go decoder (and so the Go guest) rejects it:
 * a known field with the wrong wire type, a malformed embedded message even
 * in a field this policy never reads, and the errors of next_field. Unknown
 * field numbers are skipped. After validate() succeeds the policy code can
 * read fields without checking anything.
 */
typedef struct msgtype msgtype;
typedef struct {
	uint8_t wire;       /* expected wire type */
	const msgtype *msg; /* embedded message type, or 0 */
} fielddesc;
struct msgtype {
	const char *name;
	uint32_t nfields;        /* fields are numbered 1..nfields (true of every v1 input) */
	const fielddesc *fields; /* fields[n-1] describes field n */
};

#define STR {WIRE_BYTES, 0}
#define BOOL {WIRE_VARINT, 0}
#define MSG(t) {WIRE_BYTES, &t}

static const fielddesc root_fields[] = {STR, STR, STR, STR};
static const msgtype Root = {"Root", 4, root_fields};

static const fielddesc thread_fields[] = {STR, STR, MSG(Root)};
static const msgtype Thread = {"Thread", 3, thread_fields};

static const fielddesc environment_fields[] = {STR, BOOL, BOOL, BOOL, BOOL};
static const msgtype Environment = {"Environment", 5, environment_fields};

static const fielddesc credential_fields[] = {STR, STR, STR, STR, STR};
static const msgtype Credential = {"Credential", 5, credential_fields};

static const fielddesc server_fields[] = {
	STR,             /* 1 name */
	STR,             /* 2 origin */
	STR,             /* 3 plugin_id */
	STR,             /* 4 transport */
	STR,             /* 5 url */
	STR,             /* 6 command */
	STR,             /* 7 args (repeated) */
	STR,             /* 8 environment */
	MSG(Credential), /* 9 credentials (repeated) */
	BOOL,            /* 10 enabled */
	BOOL,            /* 11 required */
	STR,             /* 12 enabled_tools (repeated) */
	STR,             /* 13 disabled_tools (repeated) */
};
static const msgtype Server = {"Server", 13, server_fields};

static const fielddesc requirement_fields[] = {STR, STR, STR};
static const msgtype Requirement = {"Requirement", 3, requirement_fields};

static const fielddesc servers_input_fields[] = {
	MSG(Thread), MSG(Environment) /* repeated */, MSG(Server) /* repeated */, BOOL, MSG(Requirement) /* repeated */,
};
static const msgtype ServersInput = {"ServersInput", 5, servers_input_fields};

static const fielddesc credentials_input_fields[] = {MSG(Thread), MSG(Server), STR, MSG(Environment)};
static const msgtype CredentialsInput = {"CredentialsInput", 4, credentials_input_fields};

static const fielddesc tool_call_input_fields[] = {MSG(Thread), STR, STR, STR, STR /* bytes: JSON */, STR};
static const msgtype ToolCallInput = {"ToolCallInput", 6, tool_call_input_fields};

/* Where validation failed: the innermost message and field, and why. */
typedef struct {
	const char *msg;
	uint32_t field; /* 0 when the tag itself could not be read */
	int rc;
} decode_error;

static int validate(const msgtype *t, span msg, decode_error *err) {
	reader r = reader_of(msg);
	field f;
	int rc;
	for (;;) {
		f.num = 0; /* set by next_field once the tag is read, for the error */
		if ((rc = next_field(&r, &f)) != WIRE_OK) break;
		if (f.num > t->nfields) continue; /* unknown field: skipped */
		const fielddesc *d = &t->fields[f.num - 1];
		if (f.wire != d->wire) {
			rc = WIRE_ERR_WIRETYPE;
			break;
		}
		if (d->msg && !validate(d->msg, f.data, err)) return 0; /* err set by the inner call */
	}
	if (rc == WIRE_END) return 1;
	err->msg = t->name;
	err->field = f.num;
	err->rc = rc;
	return 0;
}

/* Decimal digits of v (for error messages) in buf; returns the span. */
static span utoa(uint32_t v, uint8_t buf[10]) {
	uint8_t *p = buf + 10;
	do {
		*--p = (uint8_t)('0' + v % 10);
		v /= 10;
	} while (v);
	return (span){p, (uint32_t)(buf + 10 - p)};
}

static span cstr(const char *s) {
	uint32_t n = 0;
	while (s[n]) n++;
	return (span){(const uint8_t *)s, n};
}

/* malformed returns the error output for a validation failure, e.g.
 * "conformance: malformed input: Server field 9: length past end of input". */
static uint64_t malformed(const decode_error *e) {
	writer w = writer_of(out_buf, OUT_CAP);
	uint8_t digits[10];
	span parts[6] = {LIT("conformance: malformed input: "), cstr(e->msg), {0, 0}, {0, 0}, LIT(": "),
			 cstr(wire_error_text(e->rc))};
	if (e->field) {
		parts[2] = LIT(" field ");
		parts[3] = utoa(e->field, digits);
	}
	uint32_t n = 0;
	for (int i = 0; i < 6; i++) n += parts[i].len;
	put_tag(&w, FIELD_ERROR, WIRE_BYTES);
	put_varint(&w, n);
	for (int i = 0; i < 6; i++) put_raw(&w, parts[i]);
	return finish(&w);
}

/* begin_hook turns (ptr, len) into a validated input span, or returns
 * nonzero with *result set to an error output. */
static int begin_hook(const msgtype *t, uint32_t ptr, uint32_t len, span *in, uint64_t *result) {
	decode_error e = {0, 0, 0};
	if (!input_span(ptr, len, in)) {
		*result = fail(LIT("conformance: hook input is not inside the warden_alloc buffer"), LIT(""));
		return 1;
	}
	if (!validate(t, *in, &e)) {
		*result = malformed(&e);
		return 1;
	}
	return 0;
}

/* ============================================================ 3. getters */

/*
 * Getters over a validated message. They follow proto3: a singular field
 * that appears more than once takes its last value, and a singular embedded
 * message that appears more than once is the merge of all of them (so its
 * repeated fields are the concatenation, in order).
 */

/* string_field returns string field num of msg ("" when absent). */
static span string_field(span msg, uint32_t num) {
	span v = {0, 0};
	reader r = reader_of(msg);
	field f;
	while (next_field(&r, &f) == WIRE_OK)
		if (f.num == num) v = f.data;
	return v;
}

/* nested_string_field returns string field num of the (merged) embedded
 * message field outer of msg, e.g. thread.id. */
static span nested_string_field(span msg, uint32_t outer, uint32_t num) {
	span v = {0, 0};
	reader r = reader_of(msg);
	field f;
	while (next_field(&r, &f) == WIRE_OK) {
		if (f.num != outer) continue;
		reader inner = reader_of(f.data);
		field g;
		while (next_field(&inner, &g) == WIRE_OK)
			if (g.num == num) v = g.data;
	}
	return v;
}

/* each(msg, num) iterates over the occurrences of a repeated field:
 *
 *     iter it = each(server, 7);
 *     span arg;
 *     while (next(&it, &arg)) ...
 */
typedef struct {
	reader r;
	uint32_t num;
} iter;

static iter each(span msg, uint32_t num) { return (iter){reader_of(msg), num}; }

static int next(iter *it, span *v) {
	field f;
	while (next_field(&it->r, &f) == WIRE_OK) {
		if (f.num == it->num) {
			*v = f.data;
			return 1;
		}
	}
	return 0;
}

/* ============================================================= 4. policy */

/* Field numbers used below (docs/abi.md section 8). */
enum { THREAD_ID = 1, THREAD_KIND = 2 };
enum { SERVER_NAME = 1, SERVER_TRANSPORT = 4, SERVER_ARGS = 7, SERVER_CREDENTIALS = 9 };
enum { CREDENTIAL_ENV_VAR = 3 };
enum { SERVERS_IN_THREAD = 1, SERVERS_IN_SERVERS = 3 };
enum { CREDENTIALS_IN_SERVER = 2, CREDENTIALS_IN_ROUTE = 3 };
enum { TOOL_CALL_IN_SERVER = 2, TOOL_CALL_IN_TOOL = 4 };
enum { OUT_DECISIONS = 1 }; /* ServersOutput and CredentialsOutput */
enum { DECISION_NAME = 1, DECISION_ACTION = 2, DECISION_REASON = 3, DECISION_ALLOW_TOOLS = 4, DECISION_DENY_TOOLS = 5 };
enum { CRED_DECISION_INDEX = 1, CRED_DECISION_ACTION = 2, CRED_DECISION_REASON = 3 };
enum { TOOL_OUT_ACTION = 1, TOOL_OUT_REASON = 2, TOOL_OUT_REWRITE = 3, TOOL_OUT_ARGUMENTS = 4 };

enum { EXPOSE = 0, DISABLE = 1, HIDE = 2 };            /* ServerAction */
enum { LOCAL = 1, EXECUTOR = 2, DENY_CREDENTIAL = 3 }; /* CredentialAction */
enum { ALLOW = 0, DENY = 1 };                          /* ToolCallAction */

/* decide appends a ServerDecision (ServersOutput.decisions, field 1) with
 * reason a + b. */
static void decide(writer *w, span name, uint32_t action, span a, span b) {
	uint32_t d = begin_message(w, OUT_DECISIONS);
	put_string(w, DECISION_NAME, name);
	put_varint_field(w, DECISION_ACTION, action);
	put_string2(w, DECISION_REASON, a, b);
	end_message(w, d);
}

static void decide_server(writer *w, span kind, span s) {
	span name = string_field(s, SERVER_NAME);
	span none = LIT("");
	span v;
	iter it;

	/* a) reviewer threads hide stdio servers */
	if (span_eq(kind, LIT("reviewer")) && span_eq(string_field(s, SERVER_TRANSPORT), LIT("stdio"))) {
		decide(w, name, HIDE, LIT("reviewer: stdio hidden"), none);
		return;
	}
	/* b) deny-* names are disabled */
	if (span_has_prefix(name, LIT("deny-"))) {
		decide(w, name, DISABLE, LIT("denied by name: "), name);
		return;
	}
	/* c) a credential read from a SECRET_* variable disables the server */
	it = each(s, SERVER_CREDENTIALS);
	while (next(&it, &v)) {
		span env = string_field(v, CREDENTIAL_ENV_VAR);
		if (span_has_prefix(env, LIT("SECRET_"))) {
			decide(w, name, DISABLE, LIT("secret credential "), env);
			return;
		}
	}
	/* d) "limited" is exposed with only echo and add, and then add denied */
	if (span_eq(name, LIT("limited"))) {
		uint32_t d = begin_message(w, OUT_DECISIONS);
		put_string(w, DECISION_NAME, name);
		/* action EXPOSE is 0, the default: a zero value may be omitted */
		put_string(w, DECISION_REASON, LIT("limited"));
		put_string(w, DECISION_ALLOW_TOOLS, LIT("echo"));
		put_string(w, DECISION_ALLOW_TOOLS, LIT("add")); /* repeated: one field per element */
		put_string(w, DECISION_DENY_TOOLS, LIT("add"));
		end_message(w, d);
		return;
	}
	/* e) --unsafe in the arguments disables the server */
	it = each(s, SERVER_ARGS);
	while (next(&it, &v)) {
		if (span_eq(v, LIT("--unsafe"))) {
			decide(w, name, DISABLE, LIT("unsafe args"), none);
			return;
		}
	}
	/* f) no opinion */
}

EXPORT("warden_servers") uint64_t warden_servers(uint32_t ptr, uint32_t len) {
	span in, s;
	uint64_t result;
	if (begin_hook(&ServersInput, ptr, len, &in, &result)) return result;

	log_span(LOG_DEBUG, LIT("conformance: servers hook (C guest)"));
	span id = nested_string_field(in, SERVERS_IN_THREAD, THREAD_ID);
	span kind = nested_string_field(in, SERVERS_IN_THREAD, THREAD_KIND);
	if (span_eq(id, LIT("error"))) return fail(LIT("conformance: asked to fail"), LIT(""));

	writer w = writer_of(out_buf, OUT_CAP);
	iter it = each(in, SERVERS_IN_SERVERS);
	while (next(&it, &s)) decide_server(&w, kind, s);
	return finish(&w);
}

EXPORT("warden_credentials") uint64_t warden_credentials(uint32_t ptr, uint32_t len) {
	span in, server, cred;
	uint64_t result;
	if (begin_hook(&CredentialsInput, ptr, len, &in, &result)) return result;

	span route = string_field(in, CREDENTIALS_IN_ROUTE);
	writer w = writer_of(out_buf, OUT_CAP);
	uint32_t index = 0;
	/* server is singular but merges if repeated: walk every occurrence. */
	iter servers = each(in, CREDENTIALS_IN_SERVER);
	while (next(&servers, &server)) {
		iter creds = each(server, SERVER_CREDENTIALS);
		while (next(&creds, &cred)) {
			span env = string_field(cred, CREDENTIAL_ENV_VAR);
			uint32_t d = begin_message(&w, OUT_DECISIONS);
			put_varint_field(&w, CRED_DECISION_INDEX, index);
			if (span_has_prefix(env, LIT("SECRET_"))) {
				put_varint_field(&w, CRED_DECISION_ACTION, DENY_CREDENTIAL);
				put_string(&w, CRED_DECISION_REASON, LIT("secret"));
			} else if (!span_eq(route, LIT("local"))) {
				put_varint_field(&w, CRED_DECISION_ACTION, EXECUTOR);
				put_string2(&w, CRED_DECISION_REASON, LIT("route "), route);
			} else {
				put_varint_field(&w, CRED_DECISION_ACTION, LOCAL);
			}
			end_message(&w, d);
			index++;
		}
	}
	return finish(&w);
}

EXPORT("warden_tool_call") uint64_t warden_tool_call(uint32_t ptr, uint32_t len) {
	span in;
	uint64_t result;
	if (begin_hook(&ToolCallInput, ptr, len, &in, &result)) return result;

	span tool = string_field(in, TOOL_CALL_IN_TOOL);
	span server = string_field(in, TOOL_CALL_IN_SERVER);
	writer w = writer_of(out_buf, OUT_CAP);
	if (span_eq(tool, LIT("fail"))) {
		put_varint_field(&w, TOOL_OUT_ACTION, DENY);
		put_string(&w, TOOL_OUT_REASON, LIT("tool fail is blocked"));
	} else if (span_eq(tool, LIT("echo")) && span_eq(server, LIT("rewrite"))) {
		put_varint_field(&w, TOOL_OUT_REWRITE, 1);
		put_string(&w, TOOL_OUT_ARGUMENTS, LIT("{\"text\":\"rewritten\"}"));
	}
	return finish(&w); /* nothing written: allow, arguments unchanged */
}
