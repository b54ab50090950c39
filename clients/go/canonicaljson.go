package svc

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrNoCanonicalForm is wrapped by every CanonicalJSON error: the input has no RFC 8785
// canonical form (invalid UTF-8, a lone surrogate, a number that is not an IEEE 754 double).
var ErrNoCanonicalForm = errors.New("no RFC 8785 canonical form")

// CanonicalJSON returns the RFC 8785 (JCS) canonical form of the JSON text data, exactly as the
// daemon computes it: object members sorted by the UTF-16 code units of their names, no
// whitespace, strings escaping only `"`, `\` and U+0000..U+001F, and numbers written as
// ECMAScript's Number.prototype.toString writes the IEEE 754 double they denote (1e+21, 1e-7,
// 0.000001, -0 as 0). It reads the text itself rather than decoded Go values because
// encoding/json silently replaces invalid UTF-8 and lone surrogate escapes with U+FFFD, which
// would change what is hashed; both are refused here, as RFC 8785 §3.2.2.2 requires.
func CanonicalJSON(data []byte) ([]byte, error) {
	v, err := decodeStrictJSON(data)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := writeCanonical(&out, v); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// JSONDigest is the SHA-256 hex of the canonical form of the JSON text data.
func JSONDigest(data []byte) (string, error) {
	c, err := CanonicalJSON(data)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// decodeStrictJSON decodes one JSON text with numbers kept as json.Number, after refusing what
// encoding/json would silently alter.
func decodeStrictJSON(data []byte) (any, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%w: invalid UTF-8", ErrNoCanonicalForm)
	}
	if err := checkSurrogateEscapes(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not JSON: data after the value")
	}
	return v, nil
}

// checkSurrogateEscapes refuses a \uD800-\uDFFF escape that is not half of a pair.
func checkSurrogateEscapes(data []byte) error {
	inString := false
	pendingHigh := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if !inString {
			if c == '"' {
				inString = true
			}
			continue
		}
		if c == '\\' && i+1 < len(data) {
			i++
			if data[i] != 'u' || i+4 >= len(data) {
				if pendingHigh {
					return fmt.Errorf("%w: lone surrogate", ErrNoCanonicalForm)
				}
				continue
			}
			unit, err := strconv.ParseUint(string(data[i+1:i+5]), 16, 16)
			if err != nil {
				return nil // not JSON: the decoder reports it
			}
			i += 4
			switch {
			case unit >= 0xD800 && unit <= 0xDBFF:
				if pendingHigh {
					return fmt.Errorf("%w: lone surrogate", ErrNoCanonicalForm)
				}
				pendingHigh = true
			case unit >= 0xDC00 && unit <= 0xDFFF:
				if !pendingHigh {
					return fmt.Errorf("%w: lone surrogate", ErrNoCanonicalForm)
				}
				pendingHigh = false
			default:
				if pendingHigh {
					return fmt.Errorf("%w: lone surrogate", ErrNoCanonicalForm)
				}
			}
			continue
		}
		if pendingHigh {
			return fmt.Errorf("%w: lone surrogate", ErrNoCanonicalForm)
		}
		if c == '"' {
			inString = false
		}
	}
	return nil
}

func writeCanonical(out *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		out.WriteString("null")
	case bool:
		if x {
			out.WriteString("true")
		} else {
			out.WriteString("false")
		}
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil || math.IsInf(f, 0) {
			return fmt.Errorf("%w: %s is not an IEEE 754 double", ErrNoCanonicalForm, truncate(string(x), 40))
		}
		out.WriteString(FormatJSONNumber(f))
	case string:
		writeCanonicalString(out, x)
	case []any:
		out.WriteByte('[')
		for i, item := range x {
			if i > 0 {
				out.WriteByte(',')
			}
			if err := writeCanonical(out, item); err != nil {
				return err
			}
		}
		out.WriteByte(']')
	case map[string]any:
		names := make([]string, 0, len(x))
		for name := range x {
			names = append(names, name)
		}
		sort.Slice(names, func(i, j int) bool { return lessUTF16(names[i], names[j]) })
		out.WriteByte('{')
		for i, name := range names {
			if i > 0 {
				out.WriteByte(',')
			}
			writeCanonicalString(out, name)
			out.WriteByte(':')
			if err := writeCanonical(out, x[name]); err != nil {
				return err
			}
		}
		out.WriteByte('}')
	default:
		return fmt.Errorf("%w: %T is not a JSON value", ErrNoCanonicalForm, v)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func lessUTF16(a, b string) bool {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

func writeCanonicalString(out *bytes.Buffer, s string) {
	out.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			out.WriteString(`\"`)
		case '\\':
			out.WriteString(`\\`)
		case '\b':
			out.WriteString(`\b`)
		case '\t':
			out.WriteString(`\t`)
		case '\n':
			out.WriteString(`\n`)
		case '\f':
			out.WriteString(`\f`)
		case '\r':
			out.WriteString(`\r`)
		default:
			if r < 0x20 {
				fmt.Fprintf(out, `\u%04x`, r)
			} else {
				out.WriteRune(r)
			}
		}
	}
	out.WriteByte('"')
}

// FormatJSONNumber writes a finite float64 as ECMAScript's Number::toString does (RFC 8785
// §3.2.2.3): the shortest digits that round-trip, plain notation for 1e-6 <= |x| < 1e21,
// exponent notation (1e+21, 1.5e-7) outside, and -0 as 0.
func FormatJSONNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	sign := ""
	if f < 0 {
		sign = "-"
		f = -f
	}
	// "d.ddddde±x": the shortest round-trip digits and the exponent of the first one
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mantissa, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	digits := strings.Replace(mantissa, ".", "", 1)
	k := len(digits)
	n := exp + 1 // the decimal point sits after n digits
	var text string
	switch {
	case k <= n && n <= 21:
		text = digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		text = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		text = "0." + strings.Repeat("0", -n) + digits
	default:
		text = digits[:1]
		if k > 1 {
			text += "." + digits[1:]
		}
		if n-1 >= 0 {
			text += "e+" + strconv.Itoa(n-1)
		} else {
			text += "e-" + strconv.Itoa(1-n)
		}
	}
	return sign + text
}
