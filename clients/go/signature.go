package svc

import (
	"fmt"
	"strconv"
)

// This file implements the derived signature of shared/spec/rufid-v1.md §10 exactly as the daemon
// (src/core/signature.ts, where the points §10 leaves open are fixed) and the Python client do;
// all three are checked against test/vectors/signature-v1.json. The source is lexed by rufid.go's
// own lexer, so strings and comments are skipped exactly as normalization skips them. Every
// character the rules give a meaning to is ASCII and every non-ASCII byte counts as an identifier
// character, so scanning UTF-8 bytes reads the same definitions as scanning characters.

// Reasons in Details["reason"] of the error DeriveSignature returns.
const (
	SignatureNoDefinition        = "no_definition"
	SignatureUnbalanced          = "unbalanced"
	SignatureUnsupportedLanguage = "unsupported_language"
)

// signatureNotDerivable is the 1006 error naming the function and asking for an explicit signature.
func signatureNotDerivable(functionName, language, reason string) *Error {
	var why string
	switch reason {
	case SignatureUnsupportedLanguage:
		why = fmt.Sprintf("language %s has no signature derivation", strconv.Quote(language))
	case SignatureUnbalanced:
		why = fmt.Sprintf("the parameter list of %s in the source is not balanced", strconv.Quote(functionName))
	default:
		why = fmt.Sprintf("no definition of %s was found in the source", strconv.Quote(functionName))
	}
	return &Error{
		Code:    CodeValidationFailed,
		Name:    "VALIDATION_FAILED",
		Message: fmt.Sprintf("cannot derive the signature of function %s: %s; give an explicit signature", strconv.Quote(functionName), why),
		Details: map[string]any{
			"function_name": functionName,
			"reason":        reason,
			"problems":      []any{map[string]any{"pointer": "/signature", "message": "required: it cannot be derived from the source"}},
		},
	}
}

func isSigSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\v' }

func isSigIdent(c int) bool {
	return c >= 0 && (c >= 0x80 || isIdentByte(byte(c)) || c == '$')
}

func isOpener(c int) bool { return c == '(' || c == '[' || c == '{' }

func openerOf(c int) int {
	switch c {
	case ')':
		return '('
	case ']':
		return '['
	case '}':
		return '{'
	}
	return -1
}

// codeText is the lexed source, in which only code bytes (outside string literals) can match.
// Every question costs amortized O(1), so a derivation is linear in the source whatever it holds:
// lists are matched once for the whole text, and annotation scans share their results.
type codeText struct {
	l *lexed
	n int
	// match holds, for each code opener, the index of the closer that matches it, or -1.
	match []int
	// annotationMemo holds, per annotation kind, the end found from each position (unknown: -2).
	annotationMemo map[annotationKind][]int
}

// annotationKind says where a type annotation ends: a binding's `: Type` at its `=`, an arrow's
// `: ReturnType` at its `=>`.
type annotationKind int

const (
	bindingAnnotation annotationKind = iota
	arrowAnnotation
)

func newCodeText(l *lexed) codeText {
	t := codeText{l: l, n: len(l.b), annotationMemo: map[annotationKind][]int{}}
	t.match = t.matchLists()
	return t
}

// matchLists is one pass over the text: a closer that does not match the innermost open list
// makes it and every list around it unbalanced (-1), as does the end of the text; exactly what
// scanning from each opener would find.
func (t codeText) matchLists() []int {
	match := make([]int, t.n)
	for i := range match {
		match[i] = -1
	}
	var open []int
	for i := 0; i < t.n; i++ {
		c := t.at(i)
		if isOpener(c) {
			open = append(open, i)
		} else if o := openerOf(c); o >= 0 && len(open) > 0 {
			top := open[len(open)-1]
			if int(t.l.b[top]) == o {
				match[top] = i
				open = open[:len(open)-1]
			} else {
				open = open[:0]
			}
		}
	}
	return match
}

// at is the code byte at i, or -1 (a literal byte, or out of range).
func (t codeText) at(i int) int {
	if i < 0 || i >= t.n || !t.l.code[i] {
		return -1
	}
	return int(t.l.b[i])
}

func (t codeText) skipSpace(i int) int {
	for c := t.at(i); c >= 0 && isSigSpace(byte(c)); c = t.at(i) {
		i++
	}
	return i
}

// word reports whether w starts at i, in code bytes, with no identifier byte right before or after.
func (t codeText) word(i int, w string) bool {
	end := i + len(w)
	if end > t.n || isSigIdent(t.at(i-1)) || isSigIdent(t.at(end)) {
		return false
	}
	for k := i; k < end; k++ {
		if !t.l.code[k] || t.l.b[k] != w[k-i] {
			return false
		}
	}
	return true
}

func (t codeText) identEnd(i int) int {
	for isSigIdent(t.at(i)) {
		i++
	}
	return i
}

func (t codeText) arrow(i int) bool { return t.at(i) == '=' && t.at(i+1) == '>' }

// closing is the index of the closer of the list opened at open (`()[]{}` nested), or -1 when a
// closer does not match its opener or the text ends first.
func (t codeText) closing(open int) int { return t.match[open] }

func (t codeText) annotationStop(kind annotationKind, i int) bool {
	if kind == arrowAnnotation {
		return t.arrow(i)
	}
	return t.at(i) == '=' && !t.arrow(i) && t.at(i+1) != '='
}

// annotationEnd is the first depth-0 code index from start where an annotation of kind ends
// (`=>` is skipped otherwise); -1 at a depth-0 `,`, `;` or LF, an unbalanced list, an enclosing
// list's closer, or the end. The answer depends on the position only, so every position a scan
// passes records it for later scans.
func (t codeText) annotationEnd(start int, kind annotationKind) int {
	memo, ok := t.annotationMemo[kind]
	if !ok {
		memo = make([]int, t.n)
		for i := range memo {
			memo[i] = -2
		}
		t.annotationMemo[kind] = memo
	}
	var passed []int
	end := -1
scan:
	for i := start; i < t.n; {
		if memo[i] != -2 {
			end = memo[i]
			break
		}
		passed = append(passed, i)
		c := t.at(i)
		switch {
		case c < 0:
			i++
		case t.annotationStop(kind, i):
			end = i
			break scan
		case c == ',' || c == ';' || c == '\n' || openerOf(c) >= 0:
			break scan
		case t.arrow(i):
			i += 2
		case isOpener(c):
			if t.match[i] < 0 {
				break scan
			}
			i = t.match[i] + 1
		default:
			i++
		}
	}
	for _, p := range passed {
		memo[p] = end
	}
	return end
}

// list applies §10.4 to open..close: whitespace runs outside literals become one space, none
// right after `(` or right before `)`.
func (t codeText) list(open, close int) string {
	out := make([]byte, 0, close-open+1)
	for i := open; i <= close; {
		if t.l.code[i] && isSigSpace(t.l.b[i]) {
			j := i
			for j <= close && t.l.code[j] && isSigSpace(t.l.b[j]) {
				j++
			}
			if t.at(i-1) != '(' && t.at(j) != ')' {
				out = append(out, ' ')
			}
			i = j
			continue
		}
		out = append(out, t.l.b[i])
		i++
	}
	return string(out)
}

// found is a candidate's outcome: the bounds of its list (close -1: unbalanced), or a bare
// parameter; ok false when the candidate is not a definition.
type found struct {
	ok          bool
	open, close int
	bare        string
}

var notFound = found{}

// DeriveSignature returns the signature rufid-v1 §10 derives for functionName in source, e.g.
// "(a, b = g(1))": what a node uses when a function is published without one. When none can be
// derived it returns an *Error with Code 1006 (VALIDATION_FAILED) whose Details["reason"] is
// SignatureNoDefinition, SignatureUnbalanced or SignatureUnsupportedLanguage.
func DeriveSignature(functionName, language, source string) (string, error) {
	name := TrimASCIISpace(functionName)
	fam := Family(language)
	if fam == FamilyPlain {
		return "", signatureNotDerivable(name, language, SignatureUnsupportedLanguage)
	}
	if name == "" {
		return "", signatureNotDerivable(name, language, SignatureNoDefinition)
	}
	s := PrepareSource(source)
	var l *lexed
	if fam == FamilyPython {
		l = lexPython(s)
	} else {
		l = lexCLike(s, fam)
	}
	t := newCodeText(l)
	for i := 0; i < t.n; i++ {
		if t.at(i) < 0 || isSigIdent(t.at(i-1)) {
			continue
		}
		f := definitionAt(t, i, name, fam)
		if !f.ok {
			continue
		}
		if f.bare != "" {
			return "(" + f.bare + ")", nil
		}
		if f.close < 0 {
			return "", signatureNotDerivable(name, language, SignatureUnbalanced)
		}
		return t.list(f.open, f.close), nil
	}
	return "", signatureNotDerivable(name, language, SignatureNoDefinition)
}

// ComputeRUFIDDerivingSignature is ComputeRUFID, with the signature derived by DeriveSignature
// when in.Signature is empty (as a node does for a publish without one).
func ComputeRUFIDDerivingSignature(in RUFIDInput) (RUFIDComputation, error) {
	if in.Signature == "" {
		sig, err := DeriveSignature(in.FunctionName, in.Language, in.SourceCode)
		if err != nil {
			return RUFIDComputation{}, err
		}
		in.Signature = sig
	}
	return ComputeRUFID(in), nil
}

func listAt(t codeText, open int) found {
	if t.at(open) != '(' {
		return notFound
	}
	return found{ok: true, open: open, close: t.closing(open)}
}

func namedListAt(t codeText, i int, name string) found {
	if !t.word(i, name) {
		return notFound
	}
	return listAt(t, t.skipSpace(i+len(name)))
}

func afterStar(t codeText, i int) int {
	if t.at(i) == '*' {
		return t.skipSpace(i + 1)
	}
	return i
}

func definitionAt(t codeText, i int, name string, fam LanguageFamily) found {
	switch fam {
	case FamilyPython:
		if !t.word(i, "def") {
			return notFound
		}
		return namedListAt(t, t.skipSpace(i+3), name)
	case FamilyGo:
		if !t.word(i, "func") {
			return notFound
		}
		j := t.skipSpace(i + 4)
		if t.at(j) == '(' {
			// a method's receiver, or a function literal's parameters (then no NAME follows)
			end := t.closing(j)
			if end < 0 {
				return notFound
			}
			j = t.skipSpace(end + 1)
		}
		return namedListAt(t, j, name)
	default:
		if t.word(i, "function") {
			return namedListAt(t, afterStar(t, t.skipSpace(i+8)), name)
		}
		if !t.word(i, name) {
			return notFound
		}
		return bindingAt(t, t.skipSpace(i+len(name)))
	}
}

// bindingAt reads a js binding after NAME: `[: Type] = VALUE` starting at i.
func bindingAt(t codeText, i int) found {
	if t.at(i) == ':' {
		i = t.annotationEnd(i+1, bindingAnnotation)
		if i < 0 {
			return notFound
		}
	}
	if t.at(i) != '=' || t.at(i+1) == '=' || t.at(i+1) == '>' {
		return notFound
	}
	v := t.skipSpace(i + 1)
	if t.word(v, "async") {
		a := t.skipSpace(v + 5)
		var f found
		if t.word(a, "function") {
			f = listAt(t, afterStar(t, t.skipSpace(a+8)))
		} else {
			f = arrowAt(t, a)
		}
		if f.ok {
			return f
		}
		// else `async` itself may be a bare parameter: `async => …`
	}
	if t.word(v, "function") {
		return listAt(t, afterStar(t, t.skipSpace(v+8)))
	}
	return arrowAt(t, v)
}

// arrowAt reads `(…) [: ReturnType] =>` or a bare parameter `x =>` at i.
func arrowAt(t codeText, i int) found {
	if t.at(i) == '(' {
		end := t.closing(i)
		if end < 0 {
			return found{ok: true, open: i, close: -1}
		}
		after := t.skipSpace(end + 1)
		if t.at(after) == ':' {
			after = t.annotationEnd(after+1, arrowAnnotation)
			if after < 0 {
				return notFound
			}
		}
		if !t.arrow(after) {
			return notFound
		}
		return found{ok: true, open: i, close: end}
	}
	end := t.identEnd(i)
	if end > i && t.arrow(t.skipSpace(end)) {
		return found{ok: true, bare: string(t.l.b[i:end])}
	}
	return notFound
}
