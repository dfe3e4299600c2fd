package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// DecodeParams decodes a request's params strictly into v, a pointer to one of this
// package's params structs, and validates them. A non-nil error is always an *Error with
// CodeInvalidParams whose message names the offending field and never quotes a value.
//
// Absent or null params decode as the zero value (then validated, so a method with a
// required field still fails). Otherwise params must be a JSON object, and:
//
//   - every member must be a field of v, matched exactly (case-sensitive) — an unknown
//     member is an error, so a misspelt "threadID" cannot silently become "no thread";
//   - no member may appear twice in any object of the params structure;
//   - every value must have the field's JSON type; integers must fit the field;
//   - null is accepted for any member and means "absent".
//
// Members whose Go type is json.RawMessage or any (tool arguments, _meta) are opaque and
// not inspected. "_meta" is accepted only where it is a declared field
// (McpServerToolCallParams, where it is forwarded to the MCP server); elsewhere it is an
// unknown field like any other, so a client never believes metadata was honoured when it
// was dropped.
//
// If v has a Validate() error method, it is called after decoding.
func DecodeParams(raw json.RawMessage, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return Internal(fmt.Errorf("DecodeParams: want a non-nil pointer, got %T", v))
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) != 0 && !isNull(raw) {
		if raw[0] != '{' {
			return InvalidParams("params must be an object")
		}
		tokens := newTokenDecoder(raw)
		if err := checkValue(tokens, rv.Type().Elem(), ""); err != nil {
			return err
		}
		if _, err := tokens.Token(); err != io.EOF {
			return InvalidParams("malformed params")
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			// checkValue accepts only what decodes; this is a backstop.
			return InvalidParams(decodeErrorReason(err))
		}
	}
	if n, ok := v.(interface{ normalize() }); ok {
		n.normalize()
	}
	if val, ok := v.(interface{ Validate() error }); ok {
		if err := val.Validate(); err != nil {
			var pe *Error
			if errors.As(err, &pe) {
				return pe
			}
			return InvalidParams(err.Error())
		}
	}
	return nil
}

func newTokenDecoder(raw []byte) *json.Decoder {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec
}

// checkValue reads one JSON value from dec and checks it against t. path is the JSON
// path of the value ("" at the top).
func checkValue(dec *json.Decoder, t reflect.Type, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return InvalidParams(syntaxReason(path))
	}
	if tok == nil { // null: "absent" for every type
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[json.RawMessage]() || t.Kind() == reflect.Interface ||
		reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()) {
		return skipRest(dec, tok, path)
	}
	switch t.Kind() {
	case reflect.Struct:
		if tok != json.Delim('{') {
			return typeError(path, t)
		}
		fields := structFields(t)
		seen := map[string]bool{}
		for dec.More() {
			keyTok, err := dec.Token()
			if err != nil {
				return InvalidParams(syntaxReason(path))
			}
			key, _ := keyTok.(string)
			kp := joinPath(path, key)
			if seen[key] {
				return InvalidParams("duplicate field " + quote(kp))
			}
			seen[key] = true
			ft, ok := fields[key]
			if !ok {
				return InvalidParams("unknown field " + quote(kp))
			}
			if err := checkValue(dec, ft, kp); err != nil {
				return err
			}
		}
		_, err := dec.Token() // '}'
		if err != nil {
			return InvalidParams(syntaxReason(path))
		}
		return nil
	case reflect.Map:
		if tok != json.Delim('{') || t.Key().Kind() != reflect.String {
			return typeError(path, t)
		}
		seen := map[string]bool{}
		for dec.More() {
			keyTok, err := dec.Token()
			if err != nil {
				return InvalidParams(syntaxReason(path))
			}
			key, _ := keyTok.(string)
			kp := joinPath(path, key)
			if seen[key] {
				return InvalidParams("duplicate field " + quote(kp))
			}
			seen[key] = true
			if err := checkValue(dec, t.Elem(), kp); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		if err != nil {
			return InvalidParams(syntaxReason(path))
		}
		return nil
	case reflect.Slice, reflect.Array:
		if tok != json.Delim('[') {
			return typeError(path, t)
		}
		for i := 0; dec.More(); i++ {
			if err := checkValue(dec, t.Elem(), indexPath(path, i)); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		if err != nil {
			return InvalidParams(syntaxReason(path))
		}
		return nil
	case reflect.String:
		if _, ok := tok.(string); !ok {
			return typeError(path, t)
		}
		return nil
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			return typeError(path, t)
		}
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := tok.(json.Number)
		if !ok {
			return typeError(path, t)
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil || reflect.Zero(t).OverflowInt(i) {
			return typeError(path, t)
		}
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := tok.(json.Number)
		if !ok {
			return typeError(path, t)
		}
		u, err := strconv.ParseUint(string(n), 10, 64)
		if err != nil || reflect.Zero(t).OverflowUint(u) {
			return typeError(path, t)
		}
		return nil
	case reflect.Float32, reflect.Float64:
		n, ok := tok.(json.Number)
		if !ok {
			return typeError(path, t)
		}
		f, err := n.Float64()
		if err != nil || math.IsInf(f, 0) {
			return typeError(path, t)
		}
		return nil
	}
	return typeError(path, t)
}

// skipRest consumes the rest of a value whose first token was tok.
func skipRest(dec *json.Decoder, tok json.Token, path string) error {
	d, ok := tok.(json.Delim)
	if !ok || (d != '{' && d != '[') {
		return nil
	}
	for depth := 1; depth > 0; {
		t, err := dec.Token()
		if err != nil {
			return InvalidParams(syntaxReason(path))
		}
		if d, ok := t.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

// structFields maps the exact JSON name of each field of struct type t (including the
// fields of embedded structs without a name tag) to the field's type.
func structFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if _, dup := out[name]; !dup {
				out[name] = f.Type
			}
		}
	}
	walk(t)
	return out
}

// typeError names the field and the JSON type it needs.
func typeError(path string, t reflect.Type) error {
	if path == "" {
		return InvalidParams("params must be " + jsonTypeName(t))
	}
	return InvalidParams("field " + quote(path) + " must be " + jsonTypeName(t))
}

func jsonTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer in range"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer in range"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a valid value"
}

func syntaxReason(path string) string {
	if path == "" {
		return "malformed params"
	}
	return "malformed value of field " + quote(path)
}

// decodeErrorReason turns an encoding/json error into a reason naming the field without
// quoting input.
func decodeErrorReason(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return "field " + quote(te.Field) + " has the wrong type"
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "malformed params"
	}
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		return "unknown field " + strings.TrimPrefix(msg, "json: unknown field ")
	}
	return "params do not decode"
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func indexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

func missingField(path string) error {
	return InvalidParams("missing field " + quote(path))
}

func badValue(path, want string) error {
	return InvalidParams("field " + quote(path) + " must be " + want)
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

func isObjectOrAbsent(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || raw[0] == '{'
}
