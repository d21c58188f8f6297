"""Symbols in stack traces and fenced code, and what a code span or a call in prose names.

The function of each frame of Python, JavaScript, Java and Go traces; exception names;
definitions and imported names in fenced code; calls in prose (``r.json()``: a call is
code, never a file). docs/graph-model.md ("Where entities come from").
"""

from __future__ import annotations

import re

from turngraph.workers.extraction.references import Hit, _free_before

__all__ = [
    "LANGUAGE_WORDS", "find_calls", "find_code_definitions", "find_prose_calls",
    "find_prose_symbols", "find_snake_identifiers", "find_trace_source_calls",
    "find_trace_symbols", "symbol_name",
]  # fmt: skip

_PY_FRAME = re.compile(r'File "[^"\n]+", line \d+, in ([A-Za-z_]\w*)')
_JS_FRAME = re.compile(r"^[ \t]+at (?:async )?([A-Za-z_$][\w$.]*) \(", re.M)
_JAVA_FRAME = re.compile(r"^[ \t]+at ((?:[a-z_]\w*\.)+[A-Z]\w*\.[\w$<>]+)\(", re.M)
_GO_METHOD = re.compile(r"\(\*?([A-Z]\w*)\)\.([A-Za-z_]\w*)")
_DOTTED_EXCEPTION_WORDS = ("Error", "Exception", "Warning", "Failure", "Timeout", "Fault")
_DOTTED_EXCEPTION = re.compile(
    rf"(?<![\w.])((?:[a-z_][a-z0-9_]*\.)+[A-Z]\w*(?:{'|'.join(_DOTTED_EXCEPTION_WORDS)}))\b"
)
_DEFINITION = re.compile(
    r"^[ \t]*(?:export[ \t]+)?(?:default[ \t]+)?(?:pub(?:\([\w ]+\))?[ \t]+)?(?:async[ \t]+)?"
    r"(?:def|class|function\*?|fn|struct|enum|trait|interface|type|func(?:[ \t]+\([^)]*\))?|"
    r"const|let|var)[ \t]+([A-Za-z_$][\w$]*)",
    re.M,
)
_FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]+\(?([\w, \t]+)", re.M)
_PROSE_CALL = re.compile(r"(?<![\w.`/$:])([A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*)\(\)")
_CALL = re.compile(r"(?<![\w.$:])([A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*)\(")
_CAMEL = re.compile(r"[a-z][A-Z]")
_SNAKE = re.compile(
    r"(?<![\w./:@$#-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?![\w/@-]|\.\w)"
)
_SOURCE_LINE = re.compile(r'File "[^"\n]+", line \d+, in [^\n]*\n([^\n]+)')


_SYMBOL = re.compile(r"^([A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*)(?:\([^()]*\))?[;!]?$")
_EXCEPTION_WORDS = ("Error", "Exception", "Failed", "Failure", "Warning", "Timeout")
_EXCEPTION_SUFFIX = re.compile(rf"(?:{'|'.join(_EXCEPTION_WORDS)})\b")
_CAMEL_BEFORE = re.compile(r"(?:[A-Z][a-z0-9]+)+$")
_TEST_ID = re.compile(r"test_\w+\b(?!\.\w)")
_NOT_SYMBOLS = frozenset({"True", "False", "None", "null", "true", "false", "nil", "self"})
LANGUAGE_WORDS = frozenset(
    # Keywords, literals and primitive types of Python, JavaScript/TypeScript, Go, Rust,
    # Java: the language, never a symbol of the project on their own (casefolded).
    [
        "and", "as", "assert", "async", "await", "break", "case", "catch", "class", "const",
        "continue", "def", "default", "del", "do", "elif", "else", "enum", "except", "export",
        "extends", "false", "finally", "fn", "for", "from", "func", "function", "go", "if", "impl",
        "implements", "import", "in", "instanceof", "interface", "is", "lambda", "let", "loop",
        "match", "mod", "module", "mut", "new", "nil", "none", "not", "null", "or", "package",
        "pass", "private", "protected", "pub", "public", "raise", "return", "self", "static",
        "struct", "super", "switch", "this", "throw", "throws", "true", "try", "type", "typeof",
        "undefined", "use", "var", "void", "where", "while", "with", "yield", "any", "unknown",
        "never", "string", "number", "boolean", "bigint", "symbol", "object", "int", "float", "str",
        "bool", "bytes", "dict", "list", "tuple", "set", "char", "long", "short", "double", "byte",
        "i32", "i64", "u8", "u32", "u64", "usize", "f32", "f64", "install", "run", "build", "test",
        "value",
    ]
)  # fmt: skip


def symbol_name(code: str) -> str | None:
    """The symbol a code span names (``foo()`` -> ``foo``), or None for commands, values."""
    match = _SYMBOL.match(code)
    if match is None:
        return None
    name = match.group(1)
    if name in _NOT_SYMBOLS or (name.isupper() and "_" not in name and "." not in name):
        return None  # values and commands/keywords (MERGE, BLPOP), not code symbols
    if name.casefold() in LANGUAGE_WORDS:
        return None  # `any`, `unknown`, `else`: the language, not the project
    return name


def find_prose_symbols(text: str) -> list[Hit]:
    """Symbols recognisable outside code spans: exception class names
    (``ConstraintValidationFailed``) and pytest node ids (``file.py::test_x``)."""
    hits: list[Hit] = []
    if any(word in text for word in _EXCEPTION_WORDS):
        for suffix in _EXCEPTION_SUFFIX.finditer(text):
            camel = _CAMEL_BEFORE.search(text, max(0, suffix.start() - 80), suffix.start())
            start = camel.start() if camel else suffix.start()
            if start == suffix.start() and not camel:
                continue  # a bare "Error" is not a class name
            if _free_before(text, start, ".'\""):
                hits.append(Hit(start, suffix.end(), "Symbol", text[start : suffix.end()]))
    if "test_" in text:
        for match in _TEST_ID.finditer(text):
            start = match.start()
            if text[max(0, start - 2) : start] == "::" or _free_before(text, start, "./:"):
                hits.append(Hit(*match.span(), "Symbol", match.group(0)))
    return hits


def _symbol_ok(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return len(last) > 1 and last.casefold() not in LANGUAGE_WORDS and not last.isupper()


def find_trace_symbols(text: str) -> list[Hit]:
    """Frame functions of Python, JavaScript, Java and Go traces, and dotted exceptions."""
    hits: list[Hit] = []
    if 'File "' in text:
        hits += [
            Hit(*m.span(1), "Symbol", m.group(1))
            for m in _PY_FRAME.finditer(text)
            if _symbol_ok(m.group(1))
        ]
    if "\n" in text and ("    at " in text or "\tat " in text):
        for pattern in (_JS_FRAME, _JAVA_FRAME):
            hits += [
                Hit(*m.span(1), "Symbol", m.group(1))
                for m in pattern.finditer(text)
                if _symbol_ok(m.group(1)) and m.group(1) not in ("Object.<anonymous>",)
            ]
    if ")." in text:
        hits += [
            Hit(*m.span(), "Symbol", f"{m.group(1)}.{m.group(2)}")
            for m in _GO_METHOD.finditer(text)
        ]
    if "." in text and any(word in text for word in _DOTTED_EXCEPTION_WORDS):
        hits += [Hit(*m.span(1), "Symbol", m.group(1)) for m in _DOTTED_EXCEPTION.finditer(text)]
    return hits


def find_code_definitions(code: str, offset: int = 0) -> list[Hit]:
    """Names defined or imported by a fenced code block."""
    hits = [
        Hit(m.start(1) + offset, m.end(1) + offset, "Symbol", m.group(1))
        for m in _DEFINITION.finditer(code)
        if _symbol_ok(m.group(1))
    ]
    for match in _FROM_IMPORT.finditer(code):
        position = match.start(1)
        for part in match.group(1).split(","):
            name = part.strip().split()[0] if part.strip() else ""
            start = code.find(name, position) if name else -1
            if start >= 0 and _symbol_ok(name) and name != "*":
                hits.append(Hit(start + offset, start + len(name) + offset, "Symbol", name))
                position = start + len(name)
    return hits


def _looks_like_code_name(name: str) -> bool:
    """``create_engine``, ``useSWR``, ``session.execute``: not ``COUNT`` or ``print``."""
    return "_" in name or "." in name or "::" in name or _CAMEL.search(name) is not None


def find_calls(code: str, offset: int = 0) -> list[Hit]:
    """Functions called in a code span or a traceback's source line (code-looking names)."""
    if "(" not in code:
        return []
    return [
        Hit(m.start(1) + offset, m.end(1) + offset, "Symbol", m.group(1))
        for m in _CALL.finditer(code)
        if _symbol_ok(m.group(1)) and _looks_like_code_name(m.group(1))
    ]


def find_trace_source_calls(text: str) -> list[Hit]:
    """Calls on the source lines a Python traceback quotes under each frame."""
    if 'File "' not in text:
        return []
    hits: list[Hit] = []
    for match in _SOURCE_LINE.finditer(text):
        hits += find_calls(match.group(1), match.start(1))
    return hits


def find_snake_identifiers(text: str) -> list[Hit]:
    """``enable_utc``, ``CELERY_TIMEZONE`` in prose: an underscore makes a word code."""
    if "_" not in text:
        return []
    return [Hit(*m.span(1), "Symbol", m.group(1)) for m in _SNAKE.finditer(text)]


def find_prose_calls(text: str) -> list[Hit]:
    """``name()`` / ``obj.method()`` written in prose."""
    if "()" not in text:
        return []
    return [
        Hit(*m.span(), "Symbol", m.group(1))
        for m in _PROSE_CALL.finditer(text)
        if _symbol_ok(m.group(1))
    ]
