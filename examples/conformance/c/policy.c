/*
 * policy.c: the warden conformance policy as a freestanding C guest.
 *
 * This is a complete warden policy plugin (ABI v2, docs/abi.md) in plain C
 * with no libc and no WASI: the module's only import is warden.log. It
 * implements exactly the same policy as ../go/main.go, and the tests in
 * host/policytest/conformance_test.go check that both give the same answers
 * to the fixtures in ../tests. Build it with ./build.sh.
 *
 * Layout of the module:
 *
 *   1. ABI glue: warden_abi_version, warden_hooks, warden_alloc, the output
 *      buffer and the hook entry points' common checks.
 *   2. Opening an input: the header, the root record and its messages,
 *      checked with the flat reader of wire.h.
 *   3. The policy: the six hooks. Every field it reads is checked as it
 *      is read (wire.h); a reference outside the input turns the answer
 *      into an error output.
 *
 * Memory: the stack comes first (-Wl,--stack-first, so that an overflow
 * traps instead of overwriting data), then static data; the input buffer
 * starts at __heap_base, the end of everything the linker placed, and grows
 * in place with memory.grow. The output goes to a static
 * buffer; an output that does not fit is reported as an error (the host
 * then fails closed), never truncated.
 *
 * Built with -DWARDEN_ABI_VERSION=1 it is the same policy as a version 1
 * guest: warden_abi_version returns 1 and the hooks of version 2 are not
 * compiled in (the host refuses a version 1 module exporting them). The
 * tests use that build to show that a version 1 guest still behaves as it
 * always did.
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

#ifndef WARDEN_ABI_VERSION
#define WARDEN_ABI_VERSION 2
#endif

EXPORT("warden_abi_version") int32_t warden_abi_version(void) { return WARDEN_ABI_VERSION; }

EXPORT("warden_hooks") int32_t warden_hooks(void) {
#if WARDEN_ABI_VERSION >= 2
	return KIND_SERVERS | KIND_CREDENTIALS | KIND_TOOL_CALL | KIND_RESOURCE_READ | KIND_PROMPT_GET | KIND_TOOL_RESULT;
#else
	return KIND_SERVERS | KIND_CREDENTIALS | KIND_TOOL_CALL;
#endif
}

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

/* ============================================================== 2. input */

static span cstr(const char *s) {
	uint32_t n = 0;
	while (s[n]) n++;
	return (span){(const uint8_t *)s, n};
}

/* bad_input returns the error output for a malformed input, e.g.
 * "conformance: malformed input: reference past end of input". */
static uint64_t bad_input(int rc) {
	return fail(LIT("conformance: malformed input: "), cstr(flat_error_text(rc)));
}

/* begin_hook turns (ptr, len) into an opened input of the given kind and
 * checks the root record's messages (the thread, and for credentials the
 * server and the environment), as the Go SDK does before calling a handler.
 * It returns nonzero with *result set to an error output on failure. */
static int begin_hook(uint32_t kind, uint32_t ptr, uint32_t len, input *in, uint64_t *result) {
	span s;
	if (!input_span(ptr, len, &s)) {
		*result = fail(LIT("conformance: hook input is not inside the warden_alloc buffer"), LIT(""));
		return 1;
	}
	int rc = open_input(in, s.ptr, s.len, kind);
	if (rc != FLAT_OK) {
		*result = bad_input(rc);
		return 1;
	}
	rec root = root_record(in, root_type(kind));
	msg(in, root, 0, T_THREAD); /* slot 0 of every root record */
	if (kind == KIND_CREDENTIALS) {
		msg(in, root, CI_SERVER, T_SERVER);
		msg(in, root, CI_ENVIRONMENT, T_ENVIRONMENT);
	}
	if (in->err) {
		*result = bad_input(FLAT_BOUNDS);
		return 1;
	}
	return 0;
}

/* finish_hook returns the output of a hook that read in: w's contents, or
 * an error output if a read found a reference outside the input (the
 * decisions written so far are dropped). */
static uint64_t finish_hook(const input *in, writer *w) {
	if (in->err) return bad_input(FLAT_BOUNDS);
	return finish(w);
}

/* ============================================================= 3. policy */

/* Field numbers of the outputs (docs/abi.md section 8). */
enum { OUT_DECISIONS = 1 }; /* ServersOutput and CredentialsOutput */
enum { DECISION_NAME = 1, DECISION_ACTION = 2, DECISION_REASON = 3, DECISION_ALLOW_TOOLS = 4, DECISION_DENY_TOOLS = 5 };
enum { DECISION_ALLOW_PROMPTS = 6, DECISION_DENY_PROMPTS = 7, DECISION_ALLOW_RESOURCES = 8, DECISION_DENY_RESOURCES = 9 }; /* version 2 */
enum { CRED_DECISION_INDEX = 1, CRED_DECISION_ACTION = 2, CRED_DECISION_REASON = 3 };
enum { TOOL_OUT_ACTION = 1, TOOL_OUT_REASON = 2, TOOL_OUT_REWRITE = 3, TOOL_OUT_ARGUMENTS = 4 }; /* and ResourceRead-, PromptGetOutput */
enum { RESULT_OUT_ACTION = 1, RESULT_OUT_REASON = 2, RESULT_OUT_RESULT = 3 };                      /* ToolResultOutput */

enum { EXPOSE = 0, DISABLE = 1, HIDE = 2 };            /* ServerAction */
enum { LOCAL = 1, EXECUTOR = 2, DENY_CREDENTIAL = 3 }; /* CredentialAction */
enum { ALLOW = 0, DENY = 1, ASK = 2 };                 /* ToolCallAction (ASK: version 2) */
enum { PASS = 0, REWRITE = 1, ERROR = 2 };             /* ToolResultAction */

/* decide appends a ServerDecision (ServersOutput.decisions, field 1) with
 * reason a + b. */
static void decide(writer *w, span name, uint32_t action, span a, span b) {
	uint32_t d = begin_message(w, OUT_DECISIONS);
	put_string(w, DECISION_NAME, name);
	put_varint_field(w, DECISION_ACTION, action);
	put_string2(w, DECISION_REASON, a, b);
	end_message(w, d);
}

/* decide_server applies the first matching rule to server s. It reads the
 * same fields, in the same cases, as ../go/main.go (a guest reports a
 * reference outside the input only if it reads it). */
static void decide_server(input *in, writer *w, span kind, rec s) {
	span none = LIT("");

	/* a) reviewer threads hide stdio servers (the transport kind: no string
	   comparison) */
	if (span_eq(kind, LIT("reviewer")) && flags(in, s, SV_FLAGS, 1) == TRANSPORT_STDIO) {
		decide(w, str(in, s, SV_NAME), HIDE, LIT("reviewer: stdio hidden"), none);
		return;
	}
	/* b) deny-* names are disabled */
	span name = str(in, s, SV_NAME);
	if (span_has_prefix(name, LIT("deny-"))) {
		decide(w, name, DISABLE, LIT("denied by name: "), name);
		return;
	}
	/* c) a credential read from a SECRET_* variable disables the server */
	list creds = records(in, s, SV_CREDENTIALS, T_CREDENTIAL);
	for (uint32_t i = 0; i < creds.n; i++) {
		span env = str(in, at(in, creds, i), CR_ENV_VAR);
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
#if WARDEN_ABI_VERSION >= 2
	/* d2) "items" gets prompt and resource lists, in one decision */
	if (span_eq(name, LIT("items"))) {
		uint32_t d = begin_message(w, OUT_DECISIONS);
		put_string(w, DECISION_NAME, name);
		put_string(w, DECISION_REASON, LIT("items"));
		put_string(w, DECISION_ALLOW_PROMPTS, LIT("greet"));
		put_string(w, DECISION_ALLOW_PROMPTS, LIT("blocked"));
		put_string(w, DECISION_DENY_PROMPTS, LIT("blocked"));
		put_string(w, DECISION_ALLOW_RESOURCES, LIT("file:///pub/*"));
		put_string(w, DECISION_DENY_RESOURCES, LIT("file:///pub/secret"));
		end_message(w, d);
		return;
	}
#endif
	/* e) --unsafe in the arguments disables the server */
	list args = strings(in, s, SV_ARGS);
	for (uint32_t i = 0; i < args.n; i++) {
		if (span_eq(str_at(in, args, i), LIT("--unsafe"))) {
			decide(w, name, DISABLE, LIT("unsafe args"), none);
			return;
		}
	}
	/* f) no opinion */
}

EXPORT("warden_servers") uint64_t warden_servers(uint32_t ptr, uint32_t len) {
	input in;
	uint64_t result;
	if (begin_hook(KIND_SERVERS, ptr, len, &in, &result)) return result;

	log_span(LOG_DEBUG, LIT("conformance: servers hook (C guest)"));
	rec root = root_record(&in, T_SERVERS_INPUT);
	rec thread = msg(&in, root, SI_THREAD, T_THREAD);
	span id = str(&in, thread, TH_ID);
	span kind = str(&in, thread, TH_KIND);
	if (in.err) return bad_input(FLAT_BOUNDS);
	if (span_eq(id, LIT("error"))) return fail(LIT("conformance: asked to fail"), LIT(""));

	writer w = writer_of(out_buf, OUT_CAP);
	list servers = records(&in, root, SI_SERVERS, T_SERVER);
	for (uint32_t i = 0; i < servers.n && !in.err; i++) decide_server(&in, &w, kind, at(&in, servers, i));
	return finish_hook(&in, &w);
}

EXPORT("warden_credentials") uint64_t warden_credentials(uint32_t ptr, uint32_t len) {
	input in;
	uint64_t result;
	if (begin_hook(KIND_CREDENTIALS, ptr, len, &in, &result)) return result;

	rec root = root_record(&in, T_CREDENTIALS_INPUT);
	span route = str(&in, root, CI_ROUTE);
	rec server = msg(&in, root, CI_SERVER, T_SERVER);
	list creds = records(&in, server, SV_CREDENTIALS, T_CREDENTIAL);
	writer w = writer_of(out_buf, OUT_CAP);
	for (uint32_t i = 0; i < creds.n && !in.err; i++) {
		span env = str(&in, at(&in, creds, i), CR_ENV_VAR);
		uint32_t d = begin_message(&w, OUT_DECISIONS);
		put_varint_field(&w, CRED_DECISION_INDEX, i);
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
	}
	return finish_hook(&in, &w);
}

EXPORT("warden_tool_call") uint64_t warden_tool_call(uint32_t ptr, uint32_t len) {
	input in;
	uint64_t result;
	if (begin_hook(KIND_TOOL_CALL, ptr, len, &in, &result)) return result;

	rec root = root_record(&in, T_TOOL_CALL_INPUT);
	span tool = str(&in, root, TC_TOOL);
	span server = str(&in, root, TC_SERVER);
	writer w = writer_of(out_buf, OUT_CAP);
	if (span_eq(tool, LIT("fail"))) {
		put_varint_field(&w, TOOL_OUT_ACTION, DENY);
		put_string(&w, TOOL_OUT_REASON, LIT("tool fail is blocked"));
#if WARDEN_ABI_VERSION >= 2
	} else if (span_eq(tool, LIT("ask"))) {
		put_varint_field(&w, TOOL_OUT_ACTION, ASK);
		put_string2(&w, TOOL_OUT_REASON, LIT("confirm ask on "), server);
#endif
	} else if (span_eq(tool, LIT("echo")) && span_eq(server, LIT("rewrite"))) {
		put_varint_field(&w, TOOL_OUT_REWRITE, 1);
		put_string(&w, TOOL_OUT_ARGUMENTS, LIT("{\"text\":\"rewritten\"}"));
	}
	return finish_hook(&in, &w); /* nothing written: allow, arguments unchanged */
}

#if WARDEN_ABI_VERSION >= 2

/* ------------------------------------------------ the hooks of ABI v2 */

EXPORT("warden_resource_read") uint64_t warden_resource_read(uint32_t ptr, uint32_t len) {
	input in;
	uint64_t result;
	if (begin_hook(KIND_RESOURCE_READ, ptr, len, &in, &result)) return result;

	rec root = root_record(&in, T_RESOURCE_READ_INPUT);
	span uri = str(&in, root, RR_URI);
	writer w = writer_of(out_buf, OUT_CAP);
	if (span_has_prefix(uri, LIT("file:///etc/"))) {
		put_varint_field(&w, TOOL_OUT_ACTION, DENY);
		put_string2(&w, TOOL_OUT_REASON, LIT("resource under /etc: "), uri);
	}
	return finish_hook(&in, &w);
}

EXPORT("warden_prompt_get") uint64_t warden_prompt_get(uint32_t ptr, uint32_t len) {
	input in;
	uint64_t result;
	if (begin_hook(KIND_PROMPT_GET, ptr, len, &in, &result)) return result;

	rec root = root_record(&in, T_PROMPT_GET_INPUT);
	span name = str(&in, root, PG_NAME);
	writer w = writer_of(out_buf, OUT_CAP);
	if (span_eq(name, LIT("blocked"))) {
		span server = str(&in, root, PG_SERVER);
		put_varint_field(&w, TOOL_OUT_ACTION, DENY);
		put_string2(&w, TOOL_OUT_REASON, LIT("prompt blocked on "), server);
	} else if (span_eq(name, LIT("greet"))) {
		put_varint_field(&w, TOOL_OUT_REWRITE, 1);
		put_string(&w, TOOL_OUT_ARGUMENTS, LIT("{\"name\":\"conformance\"}"));
	}
	return finish_hook(&in, &w);
}

/* tool_result: a result holding the marker is replaced by a redacted one;
 * otherwise an upstream tool error (the is_error flag) is replaced by a
 * tool error of the policy's own. */
EXPORT("warden_tool_result") uint64_t warden_tool_result(uint32_t ptr, uint32_t len) {
	input in;
	uint64_t result;
	if (begin_hook(KIND_TOOL_RESULT, ptr, len, &in, &result)) return result;

	rec root = root_record(&in, T_TOOL_RESULT_INPUT);
	span res = str(&in, root, TR_RESULT);
	writer w = writer_of(out_buf, OUT_CAP);
	if (span_contains(res, LIT("CONFORMANCE-SECRET"))) {
		span tool = str(&in, root, TR_TOOL);
		put_varint_field(&w, RESULT_OUT_ACTION, REWRITE);
		put_string2(&w, RESULT_OUT_REASON, LIT("marker redacted from "), tool);
		put_string(&w, RESULT_OUT_RESULT, LIT("{\"content\":[{\"type\":\"text\",\"text\":\"[redacted]\"}]}"));
	} else if (flags(&in, root, TR_FLAGS, 0) & TR_FLAG_IS_ERROR) {
		span tool = str(&in, root, TR_TOOL);
		put_varint_field(&w, RESULT_OUT_ACTION, ERROR);
		put_string2(&w, RESULT_OUT_REASON, LIT("upstream error from "), tool);
	}
	return finish_hook(&in, &w);
}

#endif /* WARDEN_ABI_VERSION >= 2 */
