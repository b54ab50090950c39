package svc_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	svc "github.com/svc-node/svc-node/clients/go"
)

// vector is one case of test/vectors/rufid-v1.json.
type vector struct {
	ID             string   `json:"id"`
	Covers         []string `json:"covers"`
	FunctionName   string   `json:"function_name"`
	Signature      string   `json:"signature"`
	Language       string   `json:"language"`
	SourceCode     string   `json:"source_code"`
	NormalizedCode string   `json:"normalized_code"`
	SHA256Hex      string   `json:"sha256_hex"`
	RUFIDShort     string   `json:"rufid_short"`
}

// vectorsPath is the shared vectors file, relative to this package, unless SVC_VECTORS is set.
func vectorsPath() string {
	if p := os.Getenv("SVC_VECTORS"); p != "" {
		return p
	}
	return filepath.Join("..", "..", "test", "vectors", "rufid-v1.json")
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	path := vectorsPath()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading RUFID vectors (set SVC_VECTORS to override the path): %v", err)
	}
	var file struct {
		Algorithm string   `json:"algorithm"`
		Cases     []vector `json:"cases"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	if file.Algorithm != "rufid-v1" {
		t.Fatalf("%s: algorithm %q, want rufid-v1", path, file.Algorithm)
	}
	if len(file.Cases) == 0 {
		t.Fatalf("%s: no cases", path)
	}
	return file.Cases
}

var shortPattern = regexp.MustCompile(`^[A-Za-z0-9]{12}$`)

func TestRUFIDVectors(t *testing.T) {
	cases := loadVectors(t)
	seen := map[string]bool{}
	for _, v := range cases {
		if v.ID == "" || seen[v.ID] {
			t.Fatalf("vector id %q is empty or duplicated", v.ID)
		}
		seen[v.ID] = true
		t.Run(v.ID, func(t *testing.T) {
			got := svc.ComputeRUFID(svc.RUFIDInput{
				FunctionName: v.FunctionName, Signature: v.Signature, Language: v.Language, SourceCode: v.SourceCode,
			})
			if got.NormalizedCode != v.NormalizedCode {
				t.Errorf("normalized_code\n got: %q\nwant: %q", got.NormalizedCode, v.NormalizedCode)
			}
			if got.ContentDigest != v.SHA256Hex {
				t.Errorf("sha256_hex: got %s, want %s", got.ContentDigest, v.SHA256Hex)
			}
			if got.RUFIDShort != v.RUFIDShort {
				t.Errorf("rufid_short: got %s, want %s", got.RUFIDShort, v.RUFIDShort)
			}
			if !shortPattern.MatchString(got.RUFIDShort) || !svc.IsShortRUFID(got.RUFIDShort) {
				t.Errorf("rufid_short %q is not 12 alphanumerics", got.RUFIDShort)
			}
			// The canonical string is name:signature:normalized (trimmed name and signature).
			wantCanonical := strings.Trim(v.FunctionName, " \t\n\r\f\v") + ":" + strings.Trim(v.Signature, " \t\n\r\f\v") + ":" + got.NormalizedCode
			if got.Canonical != wantCanonical {
				t.Errorf("canonical\n got: %q\nwant: %q", got.Canonical, wantCanonical)
			}
			// Independent check of the digest and base62 steps with a different encoder.
			sum := sha256.Sum256([]byte(got.Canonical))
			if hex.EncodeToString(sum[:]) != got.ContentDigest {
				t.Errorf("content digest is not SHA-256 of the canonical string")
			}
			if b62 := referenceBase62(sum[:]); !strings.HasPrefix(b62, got.RUFIDShort) {
				t.Errorf("short %s is not a prefix of base62 %s", got.RUFIDShort, b62)
			}
			// Normalization is idempotent for every family.
			if again := svc.NormalizeSource(got.NormalizedCode, v.Language); again != got.NormalizedCode {
				t.Errorf("normalization not idempotent:\n once: %q\ntwice: %q", got.NormalizedCode, again)
			}
		})
	}
}

// referenceBase62 uses big.Int.Text(62), whose alphabet is 0-9a-zA-Z, then swaps letter case to
// get the spec alphabet 0-9A-Za-z.
func referenceBase62(b []byte) string {
	s := new(big.Int).SetBytes(b).Text(62)
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return r
	}, s)
}

func TestVectorsCoverSpecBullets(t *testing.T) {
	covered := map[string]bool{}
	families := map[svc.LanguageFamily]bool{}
	for _, v := range loadVectors(t) {
		for _, c := range v.Covers {
			covered[c] = true
		}
		families[svc.Family(v.Language)] = true
	}
	for _, bullet := range []string{
		"family:python", "family:js", "family:go", "family:plain", "comment-in-string",
		"block-comment-no-lf", "block-comment-with-lf", "crlf", "bom", "python-triple-quoted",
		"indentation-depth", "template-trailing-whitespace", "unterminated-string", "empty-source", "non-ascii",
	} {
		if !covered[bullet] {
			t.Errorf("no vector covers %q (rufid-v1.md §9)", bullet)
		}
	}
	for _, f := range []svc.LanguageFamily{svc.FamilyPython, svc.FamilyJS, svc.FamilyGo, svc.FamilyPlain} {
		if !families[f] {
			t.Errorf("no vector uses family %s", f)
		}
	}
}

func TestBase62(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{nil, "0"},
		{[]byte{0}, "0"},
		{[]byte{0, 0, 1}, "1"},
		{[]byte{9}, "9"},
		{[]byte{10}, "A"},
		{[]byte{35}, "Z"},
		{[]byte{36}, "a"},
		{[]byte{61}, "z"},
		{[]byte{62}, "10"},
		{[]byte{0xff}, "47"},        // 255 = 4*62 + 7
		{[]byte{0x01, 0x00}, "48"},  // 256 = 4*62 + 8
		{[]byte{0x0f, 0x03}, "zz"},  // 3843 = 61*62 + 61
		{[]byte{0x0f, 0x04}, "100"}, // 3844 = 62^2
		{[]byte{0xff, 0xff}, "H31"}, // 65535 = 17*3844 + 3*62 + 1
	} {
		if got := svc.Base62(tc.in); got != referenceBase62(tc.in) {
			t.Errorf("Base62(%x) = %q, reference %q", tc.in, got, referenceBase62(tc.in))
		}
		if got := svc.Base62(tc.in); got != tc.want {
			t.Errorf("Base62(%x) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFamily(t *testing.T) {
	for lang, want := range map[string]svc.LanguageFamily{
		"python": svc.FamilyPython, "Python3": svc.FamilyPython, "PY": svc.FamilyPython,
		"javascript": svc.FamilyJS, "JS": svc.FamilyJS, "node": svc.FamilyJS, "NodeJS": svc.FamilyJS,
		"TypeScript": svc.FamilyJS, "ts": svc.FamilyJS, "jsx": svc.FamilyJS, "tsx": svc.FamilyJS,
		"mjs": svc.FamilyJS, "cjs": svc.FamilyJS,
		"go": svc.FamilyGo, "GOLANG": svc.FamilyGo,
		"rust": svc.FamilyPlain, "": svc.FamilyPlain, " python": svc.FamilyPlain, "python ": svc.FamilyPlain,
	} {
		if got := svc.Family(lang); got != want {
			t.Errorf("Family(%q) = %s, want %s", lang, got, want)
		}
	}
}

func TestNormalizeSource(t *testing.T) {
	for _, tc := range []struct {
		name, lang, src, want string
	}{
		{"py comment", "python", "x = 1  # c\n\n\ny = 2\n", "x = 1\ny = 2"},
		{"py escaped LF continues string", "python", "s = 'a\\\n# b'  # c\n", "s = 'a\\\n# b'"},
		{"py backslash at end of input", "python", "s = 'a\\", "s = 'a\\"},
		{"py three prefix letters", "python", "x = rbf'#'  # c", "x = rbf'#'"},
		{"py empty string then hash", "python", "x = ''  # c", "x = ''"},
		{"py triple keeps inner trailing ws", "python", "s = '''a  \n\n  '''  \n", "s = '''a  \n\n  '''"},
		{"js block comment without LF", "js", "a /* x */ + b", "a   + b"},
		{"js block comment with LF", "js", "a /* x\ny */ + b", "a\n + b"},
		{"js block comment then LF", "js", "a = 1; /* x */\nb", "a = 1;\nb"},
		{"js unclosed block at end", "js", "a /* x", "a"},
		{"js template trailing ws kept", "js", "t = `a  \n\n  b`  \n", "t = `a  \n\n  b`"},
		{"js comment markers in strings", "js", "s = '//x' + \"/*y*/\" // z", "s = '//x' + \"/*y*/\""},
		{"go raw string no escapes", "go", "s := `a\\` // c", "s := `a\\`"},
		{"go rune", "go", "r := '\\'' // c", "r := '\\''"},
		{"js whitespace before string at line end kept", "js", "x = 'a'\t\n", "x = 'a'"},
		{"unicode passes through", "js", "s = 'héllo 🎉'  // ünï\n", "s = 'héllo 🎉'"},
		{"nbsp is not whitespace", "python", "x = 1\u00a0\n", "x = 1\u00a0"},
		{"bom only once", "python", "\uFEFF\uFEFFx", "\uFEFFx"},
		{"lone CR and CRLF", "python", "a\r\rb\r\nc\r", "a\nb\nc"},
		{"leading indentation kept", "python", "\n\n    x  \n", "    x"},
		{"plain trims only the end", "sql", "\n  select 1 -- c  \r\n\n", "\n  select 1 -- c"},
		{"plain keeps FF in the middle", "ruby", "a\f\nb \t\v\f\n", "a\f\nb"},
		{"empty", "go", "", ""},
		{"only whitespace", "python", " \t\n\f\v\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := svc.NormalizeSource(tc.src, tc.lang); got != tc.want {
				t.Errorf("NormalizeSource(%q, %s)\n got: %q\nwant: %q", tc.src, tc.lang, got, tc.want)
			}
		})
	}
}

func TestIdentityProperties(t *testing.T) {
	a := svc.ShortRUFID("add", "(a, b)", "js", "function add(a, b) { return a + b }")
	b := svc.ShortRUFID(" add\n", "\t(a, b) ", "JavaScript", "\uFEFF\n// doc\r\nfunction add(a, b) { return a + b }   \r\n\r\n")
	if a != b {
		t.Errorf("comments, whitespace and BOM changed the RUFID: %s vs %s", a, b)
	}
	c := svc.ShortRUFID("f", "()", "python", "def f():\n    return \"a  \"\n")
	d := svc.ShortRUFID("f", "()", "python", "def f():\n    return \"a \"\n")
	if c == d {
		t.Errorf("programs differing inside a string literal share RUFID %s", c)
	}
	e := svc.ShortRUFID("f", "()", "python", "def f():\n    return 1\n")
	f := svc.ShortRUFID("g", "()", "python", "def f():\n    return 1\n")
	if e == f {
		t.Errorf("function name is not part of the identity")
	}
	src := "def f():  # c\n    return 1\n"
	_ = svc.NormalizeSource(src, "python")
	if src != "def f():  # c\n    return 1\n" {
		t.Errorf("source modified")
	}
}

func TestParseRUFID(t *testing.T) {
	valid := []struct {
		in      string
		short   string
		version int
		tenant  string
	}{
		{"tUwBWSc8Nozv", "tUwBWSc8Nozv", 0, ""},
		{"rufid:tUwBWSc8Nozv:v1:acme", "tUwBWSc8Nozv", 1, "acme"},
		{"rufid:0123456789ab:v42:a_b.c-D", "0123456789ab", 42, "a_b.c-D"},
		{"rufid:AAAAAAAAAAAA:v1:" + strings.Repeat("t", 64), "AAAAAAAAAAAA", 1, strings.Repeat("t", 64)},
	}
	for _, tc := range valid {
		r, err := svc.ParseRUFID(tc.in)
		if err != nil {
			t.Errorf("ParseRUFID(%q): %v", tc.in, err)
			continue
		}
		if r.Short != tc.short || r.Version != tc.version || r.Tenant != tc.tenant {
			t.Errorf("ParseRUFID(%q) = %+v", tc.in, r)
		}
		if r.String() != tc.in {
			t.Errorf("String() = %q, want %q", r.String(), tc.in)
		}
		if !svc.IsValidRUFID(tc.in) {
			t.Errorf("IsValidRUFID(%q) = false", tc.in)
		}
	}
	for _, in := range []string{
		"", "tUwBWSc8Noz", "tUwBWSc8Nozv1", "tUwBWSc8Noz_", "tUwBWSc8Noz\u00e9", "tUwBWSc8Nozv\n",
		" tUwBWSc8Nozv", "rufid:tUwBWSc8Nozv", "rufid:tUwBWSc8Nozv:v1", "rufid:tUwBWSc8Nozv:v1:",
		"rufid:tUwBWSc8Nozv:v0:acme", "rufid:tUwBWSc8Nozv:v01:acme", "rufid:tUwBWSc8Nozv:1:acme",
		"rufid:tUwBWSc8Nozv:v1:acme/x", "rufid:tUwBWSc8Nozv:v1:" + strings.Repeat("t", 65),
		"RUFID:tUwBWSc8Nozv:v1:acme", "rufid:tUwBWSc8Noz:v1:acme", "rufid:tUwBWSc8Nozv:v1:acme\n",
		"rufid:tUwBWSc8Nozv:v99999999999999999999999:acme", "../../etc/passwd",
	} {
		_, err := svc.ParseRUFID(in)
		var se *svc.Error
		if !errors.As(err, &se) || se.Code != svc.CodeInvalidRUFID || se.Name != "INVALID_RUFID" {
			t.Errorf("ParseRUFID(%q) error = %v, want *Error 1001", in, err)
		}
		if !errors.Is(err, svc.ErrInvalidRUFID) || !svc.IsInvalidRUFID(err) {
			t.Errorf("ParseRUFID(%q): errors.Is(ErrInvalidRUFID) false", in)
		}
	}
	if got := svc.FormatRUFID("tUwBWSc8Nozv", 3, "acme"); got != "rufid:tUwBWSc8Nozv:v3:acme" {
		t.Errorf("FormatRUFID = %q", got)
	}
	if r, _ := svc.ParseRUFID("rufid:tUwBWSc8Nozv:v7:acme"); r.VersionLabel() != "v7" || !r.IsFull() {
		t.Errorf("VersionLabel = %q", r.VersionLabel())
	}
}
