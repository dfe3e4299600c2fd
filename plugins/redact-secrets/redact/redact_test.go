package redact

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// Fake secrets of each shape, built at run time so that no scanner mistakes this file for
// a leak.
var (
	awsID     = "AKIA" + "IOSFODNN7EXAMPLE"
	awsTemp   = "ASIA" + "ABCDEFGHIJ012345"
	awsSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"
	ghp       = "ghp_" + strings.Repeat("a1B2", 9)
	ghPAT     = "github_pat_" + "11ABCDEFG0" + strings.Repeat("x_9Z", 12)
	slack     = "xoxb-" + "1234567890-0987654321-AbCdEfGh"
	google    = "AIza" + "SyA1234567890abcdefghijklmnopqrstuv"
	stripe    = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
	openai    = "sk-proj-" + "Abc123def456ghi789jkl012"
	jwt       = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjMifQ" + ".sig_Nature-1"
	pem       = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nabc+/=\n-----END RSA PRIVATE KEY-----"
	bearer    = "abc.DEF-123_xyz"
)

func TestText(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"aws access key id", "key " + awsID + " here", "key [REDACTED:aws_access_key_id] here"},
		{"aws temporary key id", awsTemp, "[REDACTED:aws_access_key_id]"},
		{"aws id inside a longer word stays", "X" + awsID, "X" + awsID},
		{"aws id with a trailing letter stays", awsID + "Q", awsID + "Q"},
		{"aws secret, env style", "AWS_SECRET_ACCESS_KEY=" + awsSecret + "\n", "AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret_access_key]\n"},
		{"aws secret, yaml style", "aws_secret_access_key: '" + awsSecret + "'", "aws_secret_access_key: '[REDACTED:aws_secret_access_key]'"},
		{"aws secret, camel case JSON text", `{"secretAccessKey": "` + awsSecret + `"}`, `{"secretAccessKey": "[REDACTED:aws_secret_access_key]"}`},
		{"40 characters without the name stay", "value=" + awsSecret, "value=" + awsSecret},
		{"github token", "token=" + ghp + ";", "token=[REDACTED:github_token];"},
		{"github fine-grained token", ghPAT, "[REDACTED:github_token]"},
		{"short gh prefix stays", "ghp_short", "ghp_short"},
		{"slack token", "slack " + slack, "slack [REDACTED:slack_token]"},
		{"google api key", "key=" + google, "key=[REDACTED:google_api_key]"},
		{"stripe live key", stripe + ".", "[REDACTED:stripe_key]."},
		{"stripe restricted key", "r" + stripe[1:], "[REDACTED:stripe_key]"},
		{"openai key", "OPENAI_API_KEY=" + openai, "OPENAI_API_KEY=[REDACTED:openai_key]"},
		{"sk- words stay", "sk-learn-is-a-library-name", "sk-learn-is-a-library-name"},
		{"jwt", "id_token " + jwt + " end", "id_token [REDACTED:jwt] end"},
		{"not a jwt", "eyJust.one.", "eyJust.one."},
		{"pem block", "before\n" + pem + "\nafter", "before\n[REDACTED:private_key]\nafter"},
		{"cut-off pem block", "x -----BEGIN OPENSSH PRIVATE KEY-----\nAAAA", "x [REDACTED:private_key]"},
		{"public key stays", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"},
		{"authorization header", "Authorization: Bearer " + bearer + "\r\n", "Authorization: Bearer [REDACTED:bearer_token]\r\n"},
		{"lower-case header", "authorization: bearer " + bearer, "authorization: bearer [REDACTED:bearer_token]"},
		{"a long bearer token anywhere", "use Bearer " + strings.Repeat("Zz9", 6), "use Bearer [REDACTED:bearer_token]"},
		{"prose about bearers stays", "a bearer token is a secret", "a bearer token is a secret"},
		{"a bearer jwt is one bearer token", "Authorization: Bearer " + jwt, "Authorization: Bearer [REDACTED:bearer_token]"},
		{"several kinds", awsID + " " + ghp + " " + awsID, "[REDACTED:aws_access_key_id] [REDACTED:github_token] [REDACTED:aws_access_key_id]"},
		{"nothing", "plain text, Akia, ghp, xox, AIza, sk, eyJ, -----", "plain text, Akia, ghp, xox, AIza, sk, eyJ, -----"},
		{"empty", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r Redactor
			out, changed := r.Text(nil, []byte(tc.in))
			if !changed {
				out = []byte(tc.in)
			}
			if string(out) != tc.want {
				t.Fatalf("Text(%q) =\n %q\nwant\n %q", tc.in, out, tc.want)
			}
			if changed != (tc.in != tc.want) {
				t.Fatalf("changed = %v", changed)
			}
			if n := strings.Count(tc.want, "[REDACTED:"); r.Counts.Total() != n {
				t.Fatalf("counted %d, want %d", r.Counts.Total(), n)
			}
		})
	}
}

func TestJSON(t *testing.T) {
	tests := []struct {
		name, in string
		// want is the decoded value the output must equal; "" means unchanged.
		want string
	}{
		{"secret in a value", `{"text":"id ` + awsID + `"}`, `{"text":"id [REDACTED:aws_access_key_id]"}`},
		{"escape right before", `{"t":"\n` + ghp + `"}`, `{"t":"\n[REDACTED:github_token]"}`},
		{"escape right after", `{"t":"` + ghp + `\"x"}`, `{"t":"[REDACTED:github_token]\"x"}`},
		{"unicode escapes inside the secret", `{"t":"\u0041KIAIOSFODNN7EXAMPL\u0045"}`, `{"t":"[REDACTED:aws_access_key_id]"}`},
		{"escaped slash inside the secret", `{"k":"aws_secret_access_key=wJalrXUtnFEMI\/K7MDENG\/bPxRfiCYEXAMPLEKEY"}`, `{"k":"aws_secret_access_key=[REDACTED:aws_secret_access_key]"}`},
		{"surrogate pair beside", `{"t":"\ud83d\ude00` + slack + `"}`, `{"t":"😀[REDACTED:slack_token]"}`},
		{"pem with escaped newlines", `{"key":"` + strings.ReplaceAll(pem, "\n", `\n`) + `"}`, `{"key":"[REDACTED:private_key]"}`},
		{"aws secret by key", `{"AWS_SECRET_ACCESS_KEY": "` + awsSecret + `", "n": 1}`, `{"AWS_SECRET_ACCESS_KEY":"[REDACTED:aws_secret_access_key]","n":1}`},
		{"aws-secret-shaped value under another key stays", `{"other": "` + awsSecret + `"}`, ""},
		{"nested result", `{"content":[{"type":"text","text":"Authorization: Bearer ` + bearer + `"}],"structuredContent":{"tokens":["` + jwt + `",42,null,true]},"isError":false}`,
			`{"content":[{"type":"text","text":"Authorization: Bearer [REDACTED:bearer_token]"}],"structuredContent":{"tokens":["[REDACTED:jwt]",42,null,true]},"isError":false}`},
		{"a secret in a key", `{"` + ghp + `":1}`, `{"[REDACTED:github_token]":1}`},
		{"no secret keeps the bytes", `{"a":"b\u00e9\n", "c": [1, 2.5e3]}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r Redactor
			out, changed, err := r.JSON([]byte("prefix:"), []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !changed {
				if tc.want != "" {
					t.Fatalf("nothing redacted in %s", tc.in)
				}
				if string(out) != "prefix:" {
					t.Fatalf("unchanged output %q, want dst as it was", out)
				}
				return
			}
			got, ok := bytes.CutPrefix(out, []byte("prefix:"))
			if !ok || !json.Valid(got) {
				t.Fatalf("output %q: not dst followed by valid JSON", out)
			}
			var a, b any
			if err := json.Unmarshal(got, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &b); err != nil {
				t.Fatal(err)
			}
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if !bytes.Equal(ja, jb) {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestJSONKeepsUnchangedBytes: around a redacted string, every byte (spacing, number
// forms, other strings' escapes) is the input's.
func TestJSONKeepsUnchangedBytes(t *testing.T) {
	in := "{ \"a\" : 1.50E+2,\n\t\"b\": \"\\u00e9\\/\", \"c\": \"" + awsID + "\" }"
	var r Redactor
	out, changed, err := r.JSON(nil, []byte(in))
	if err != nil || !changed {
		t.Fatalf("changed %v, err %v", changed, err)
	}
	want := "{ \"a\" : 1.50E+2,\n\t\"b\": \"\\u00e9\\/\", \"c\": \"[REDACTED:aws_access_key_id]\" }"
	if string(out) != want {
		t.Fatalf("got  %q\nwant %q", out, want)
	}
}

func TestJSONMalformed(t *testing.T) {
	var r Redactor
	if _, _, err := r.JSON(nil, []byte(`{"a":"open`)); err != ErrMalformed {
		t.Fatalf("err = %v, want ErrMalformed", err)
	}
}

// FuzzJSON: a valid JSON text stays valid, whatever it holds, and no planted secret
// survives in its decoded strings.
func FuzzJSON(f *testing.F) {
	f.Add(`{"a":"x"}`)
	f.Add(`["\n","\\","\u0041"]`)
	f.Add(`{"k":{"n":[1,"s"]}}`)
	f.Add(`{"t":"\\\"AKIAIOSFODNN7EXAMPLE\\"}`)
	f.Fuzz(func(t *testing.T, doc string) {
		if !json.Valid([]byte(doc)) {
			return
		}
		var r0 Redactor
		if out, changed, err := r0.JSON(nil, []byte(doc)); err != nil || (changed && !json.Valid(out)) {
			t.Fatalf("JSON(%q) = %q, %v, %v: valid input, invalid output", doc, out, changed, err)
		}
		var v any
		_ = json.Unmarshal([]byte(doc), &v)
		// Plant a secret in a fresh string value next to whatever the input holds.
		planted, _ := json.Marshal([]any{v, "x " + ghp + "\n"})
		var r Redactor
		out, changed, err := r.JSON(nil, planted)
		if err != nil || !changed {
			t.Fatalf("changed %v, err %v on %s", changed, err, planted)
		}
		if !json.Valid(out) {
			t.Fatalf("invalid output %q from %q", out, planted)
		}
		var back any
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatal(err)
		}
		if s, _ := json.Marshal(back); bytes.Contains(s, []byte(ghp)) {
			t.Fatalf("the secret survived in %s", s)
		}
	})
}

func TestReport(t *testing.T) {
	var c Counts
	c[GitHubToken], c[JWT] = 2, 1
	if got := string(c.AppendReport(nil)); got != "3 secrets (github_token×2, jwt×1)" {
		t.Fatalf("report %q", got)
	}
	c = Counts{}
	c[PrivateKey] = 1
	if got := string(c.AppendReport(nil)); got != "1 secret (private_key×1)" {
		t.Fatalf("report %q", got)
	}
}

// TestWarmScansDoNotAllocate: a Redactor reused over results allocates nothing once its
// buffers have grown, with or without secrets.
func TestWarmScansDoNotAllocate(t *testing.T) {
	clean := []byte(`{"content":[{"type":"text","text":"` + strings.Repeat("plain words, nothing secret\\n", 50) + `"}]}`)
	dirty := []byte(`{"content":[{"type":"text","text":"Authorization: Bearer ` + bearer + `\n` + awsID + `"}]}`)
	var r Redactor
	buf := make([]byte, 0, 4096)
	for _, doc := range [][]byte{clean, dirty} {
		if n := testing.AllocsPerRun(100, func() { _, _, _ = r.JSON(buf[:0], doc) }); n != 0 {
			t.Errorf("%v allocations per scan of %.20q…", n, doc)
		}
	}
}

func benchDoc(secrets bool) []byte {
	var b strings.Builder
	b.WriteString(`{"content":[`)
	for i := range 200 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"text","text":"line of ordinary output with some words, paths /usr/share/doc and numbers 12345\nand an escaped \"quote\" here`)
		if secrets && i%50 == 0 {
			b.WriteString(" " + ghp + " Authorization: Bearer " + bearer)
		}
		b.WriteString(`"}`)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func BenchmarkJSON(b *testing.B) {
	for _, bc := range []struct {
		name    string
		secrets bool
	}{{"clean", false}, {"secrets", true}} {
		doc := benchDoc(bc.secrets)
		b.Run(bc.name, func(b *testing.B) {
			var r Redactor
			buf := make([]byte, 0, 2*len(doc))
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				_, _, _ = r.JSON(buf[:0], doc)
			}
		})
	}
}
