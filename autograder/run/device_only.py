"""Course kernels are device code only: refuse anything else before the CPU backend builds it.

NVRTC compiles what is device code and ignores the rest, and NVRTC defines
__CUDA_ARCH__, so a block under `#ifndef __CUDA_ARCH__` is invisible to it.
The CPU backend compiles the same file with g++ into a library that runs in
the grader's process, where such a block (say a function marked
__attribute__((constructor))) would run when the library is loaded. So, in
two steps, each naming the learner's line:

1. `refuse_directives` reads the raw text, before any compiler does: no
   #include (NVRTC, like g++, reads any file named there and prints its lines
   in its errors), no directive but #define, #if..., #pragma, #error, and no
   __CUDA_ARCH__, which course kernels never need.
2. `preprocess` runs g++'s preprocessor as NVRTC would see the file
   (__CUDA_ARCH__ defined, no include path), then walks the declarations at
   namespace scope: each must be device code (__global__, __device__,
   __constant__, __shared__, constexpr), a type, an alias, a static_assert,
   or a namespace of the same. Attributes and asm are refused anywhere.
   What it returns is exactly what the CPU backend then compiles, so what was
   checked is what is built, whatever macros or token pasting did.

This is a first line: what it cannot see (a device function's body calling a
host function, which NVRTC refuses) is left to NVRTC, and all native code from
a submission runs confined anyway (autograder.isolate.isolation).
"""

from __future__ import annotations

import re
import subprocess

from .compiler import CompileError

CHECK = "the device-code check"
# As NVRTC compiles for sm_75 in the CPU backend's check (backends.CpuBackend.load).
NVRTC_MACROS = ("-D__CUDA_ARCH__=750", "-D__CUDACC__", "-D__CUDACC_RTC__")
DIRECTIVES = {"", "define", "undef", "if", "ifdef", "ifndef", "elif", "else", "endif"}
DIRECTIVES |= {"pragma", "error", "warning"}
UNROLL = {"unroll", "nounroll"}  # the only pragmas a course kernel uses
DEVICE = {"__global__", "__device__", "__constant__", "__shared__"}
# Words that may precede "(" in a namespace-scope declaration without calling anything.
NOT_CALLS = {
    "__launch_bounds__",
    "__cluster_dims__",
    "__align__",
    "alignas",
    "decltype",
    "sizeof",
    "alignof",
}
NOT_CALLS |= {"noexcept", "int", "unsigned", "float", "double", "char", "short", "long", "bool"}
# What a variable outside a function may be declared with: built-in types
# (no constructor to run) and specifiers.
KNOWN_TYPES = DEVICE | {"static", "extern", "inline", "const", "volatile", "__restrict__"}
KNOWN_TYPES |= {"void", "bool", "char", "short", "int", "long", "float", "double", "signed"}
KNOWN_TYPES |= {"unsigned", "size_t", "ptrdiff_t", "float2", "float4", "int2", "int4", "dim3"}
KNOWN_TYPES |= {f"{u}int{n}_t" for u in ("", "u") for n in (8, 16, 32, 64)}
# Standard attributes that change no code generation a grader cares about.
ATTRIBUTES = {"likely", "unlikely", "maybe_unused", "fallthrough", "nodiscard", "noreturn"}
# Spellings that attach host behaviour (constructors, sections, assembly) to code.
FORBIDDEN = {"__attribute__", "__attribute", "__declspec", "asm", "__asm", "__asm__"}
DEVICE_ONLY = "course kernels are device code only (__global__ / __device__)"


class HostCode(CompileError):
    """The kernel's source holds host-only code; the message names the line."""

    def __init__(self, filename: str, line: int, what: str):
        super().__init__(filename, f"{filename}:{line}: {what}", CHECK)


# Comments, string and character literals, and preprocessing numbers (whose
# digit separators, as in 1'000, must not read as a character literal), in
# the order a C++ lexer tries them.
_LEXEMES = re.compile(
    r"(?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))"
    r"|(?P<number>\.?\d(?:'?[\w.]|[eEpP][+-])*)"
    r"|(?P<literal>\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*')",
    re.DOTALL,
)


def code_only(text: str) -> str:
    """text with comments, strings and characters blanked, line breaks kept."""

    def blank(m):
        return m.group(0) if m.lastgroup == "number" else re.sub(r"[^\n]", " ", m.group(0))

    return _LEXEMES.sub(blank, text)


def _spliced(source: str) -> tuple[str, list[int]]:
    """source with backslash-newlines joined, as a compiler reads it, and the
    learner's line number of each resulting line."""
    lines, numbers, pending = [], [], ""
    for number, line in enumerate(source.split("\n"), 1):
        if not pending:
            numbers.append(number)
        # g++ joins a line that ends in a backslash and blanks, too.
        if (bare := line.rstrip(" \t\r\f\v")).endswith("\\"):
            pending += bare[:-1]
            continue
        lines.append(pending + line)
        pending = ""
    if pending:
        lines.append(pending)
    return "\n".join(lines), numbers


def refuse_directives(source: str, filename: str, hidden_code: bool = True) -> None:
    """Raise HostCode for a directive that reads a file or (hidden_code: where what
    NVRTC does not see would be built, the CPU backend) hides code from NVRTC."""
    text, numbers = _spliced(source)
    # A raw string's end is where a lexer and this check could disagree, and
    # trigraphs spell # differently: neither has a place in a kernel.
    if m := re.search(r'\b(?:u8|u|U|L)?R"|\?\?[=/\'()!<>-]', text):
        line = numbers[text.count("\n", 0, m.start())]
        raise HostCode(filename, line, f"{m.group(0)}: not allowed in a course kernel")
    code = code_only(text)
    for index, line in enumerate(code.split("\n")):
        directive = re.match(r"\s*(?:#|%:)\s*(\w*)\s*(\w*)", line)
        name, argument = directive.groups() if directive else ("", "")
        if directive and (name not in DIRECTIVES or name == "pragma" and argument not in UNROLL):
            raise HostCode(
                filename,
                numbers[index],
                f"#{name}{' ' + argument if name == 'pragma' else ''}: a course kernel includes "
                "nothing and uses no directive but #define, #if, #pragma unroll and #error",
            )
        words = re.findall(r"\w+", line)
        if "_Pragma" in words:
            raise HostCode(filename, numbers[index], "_Pragma: write #pragma unroll")
        if hidden_code and "__CUDA_ARCH__" in words:
            raise HostCode(
                filename,
                numbers[index],
                "__CUDA_ARCH__: a course kernel is the same code for every GPU and the CPU, "
                "and code hidden from NVRTC by it is host-only code: " + DEVICE_ONLY,
            )


def preprocess(source: str, filename: str, cxx: str) -> str:
    """The source as NVRTC sees it, with #line markers for the learner's lines,
    after checking that it is device code only (raises HostCode)."""
    refuse_directives(source, filename)
    result = subprocess.run(
        [cxx, "-E", "-x", "c++", "-std=c++17", "-undef", "-nostdinc", *NVRTC_MACROS, "-"],
        input=source,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode:
        log = result.stderr.replace("<stdin>", filename)
        raise CompileError(filename, log[-2000:], f"{cxx} -E, as NVRTC would preprocess it")
    lines = _lines(result.stdout, filename)
    _refuse_host_code(lines, filename)
    quoted = filename.replace("\\", "\\\\").replace('"', '\\"')
    out, expected = [], None
    for number, text in lines:
        if number != expected:
            out.append(f'#line {number} "{quoted}"')
        out.append(text)
        expected = number + 1
    return "\n".join(out) + "\n"


_MARKER = re.compile(r'# (\d+) "(.*)"(?: \d+)*$')


def _lines(preprocessed: str, filename: str) -> list[tuple[int, str]]:
    """(learner's line, text) for each line of the preprocessor's output."""
    lines, number, source = [], 1, "<stdin>"
    for text in preprocessed.split("\n"):
        if m := _MARKER.match(text):
            number, source = int(m.group(1)), m.group(2)
            continue
        stripped = text.strip()
        if stripped and source != "<stdin>":  # nothing may come from another file
            raise HostCode(filename, number, f"code from {source}: {DEVICE_ONLY}")
        # A directive that a macro spelled out (`#define H #`, then `H include`)
        # would be obeyed when the output is compiled.
        if stripped.startswith(("#", "%:")) and not re.match(
            r"#\s*pragma\s+(?:unroll|nounroll)\b", stripped
        ):
            raise HostCode(filename, number, f"{stripped[:40]}: not allowed in a course kernel")
        lines.append((number, text))
        number += 1
    return lines


_TOKEN = re.compile(
    r"\s+|(?P<literal>(?:u8|u|U|L)?(?:\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'))"
    r"|(?P<word>[A-Za-z_]\w*)|(?P<number>\.?\d(?:'?[\w.]|[eEpP][+-])*)"
    r"|(?P<punct><%|%>|<:(?!:[^:>])|:>|%:|::|.)"
)
OPEN, CLOSE = {"(", "[", "{"}, {")", "]", "}"}


def _tokens(lines, filename: str) -> list[tuple[str, int]]:
    """(token, learner's line); refuses what may appear nowhere in a kernel."""
    found = []
    for number, text in lines:
        if text.lstrip().startswith("#"):
            continue  # #pragma unroll, all that _lines lets through
        for m in _TOKEN.finditer(text):
            token = m.group(0)
            if token.isspace():
                continue
            if token in FORBIDDEN:
                raise HostCode(
                    filename,
                    number,
                    f"{token} is host-only code (it can make code run when the kernel is "
                    f"loaded): {DEVICE_ONLY}",
                )
            if token in ("<%", "%>", "<:", ":>", "%:"):
                raise HostCode(filename, number, f"the digraph {token}: write {{ }} [ ] # instead")
            found.append((token, number))
    for i in range(len(found) - 1):
        if found[i][0] == found[i + 1][0] == "[":
            words = [t for t, _ in found[i + 2 : i + 5]]
            if words[:1] and words[0] not in ATTRIBUTES or words[1:3] != ["]", "]"]:
                raise HostCode(
                    filename, found[i][1], f"the attribute [[{words[0]}...]]: {DEVICE_ONLY}"
                )
    return found


class _Walk:
    """Walks the declarations by their brackets: namespaces and classes hold
    declarations, each judged by its head; a function's body is NVRTC's."""

    def __init__(self, tokens, filename: str):
        self.tokens, self.filename = tokens, filename
        self.declared: dict[str, int] = {}  # function name -> where it is declared
        self.defined: set[str] = set()

    def refuse(self, at: int, what: str):
        raise HostCode(self.filename, self.tokens[min(at, len(self.tokens) - 1)][1], what)

    def text(self, i: int) -> str:
        return self.tokens[i][0] if i < len(self.tokens) else ""

    def file(self) -> None:
        self.scope(0, in_class=None)
        for name, at in self.declared.items():
            if name not in self.defined:
                self.refuse(
                    at,
                    f"{name} is declared but not defined here, so the host's {name} would be "
                    f"called: {DEVICE_ONLY}, and define every function they call",
                )

    def past_group(self, i: int) -> int:
        """From an opening bracket, the index past its partner."""
        depth = 0
        for j in range(i, len(self.tokens)):
            depth += (self.text(j) in OPEN) - (self.text(j) in CLOSE)
            if depth == 0:
                return j + 1
        self.refuse(i, "unbalanced brackets")

    def scope(self, i: int, in_class: bool | None = False) -> int:
        """Declarations up to the closing brace of this scope (None: the file)."""
        while i < len(self.tokens):
            if self.text(i) == "}":
                if in_class is None:
                    self.refuse(i, "unbalanced brackets")
                return i + 1
            i = self.declaration(i, bool(in_class))
        return i

    def declaration(self, start: int, in_class: bool) -> int:
        """Judges one declaration; returns the index after it."""
        i, head = start, []
        while True:
            token = self.text(i)
            if token in ("", "}"):
                self.refuse(start, f"an unfinished declaration: {DEVICE_ONLY}")
            if token == ";":
                self.judge(start, head, in_class, body=False)
                return i + 1
            if in_class and token == ":" and head in (["public"], ["private"], ["protected"]):
                return i + 1
            if token in CLOSE:
                self.refuse(i, "unbalanced brackets")
            if token in ("(", "["):
                end = self.past_group(i)
                head += [t for t, _ in self.tokens[i:end]]
                i = end
                continue
            if token != "{":
                head.append(token)
                i += 1
                continue
            words = _without_prefixes(head)
            if head and not words or "namespace" in words[:2]:
                return self.scope(i + 1)  # extern "C" { ... } or a namespace
            if _is_class(words) and "(" not in words:
                return self.class_body(start, words, i)
            if "=" in _outside_brackets(words) or "(" not in words:  # = {...} or x{...}
                i = self.past_group(i)
                head.append("{...}")
                continue
            self.judge(start, head, in_class, body=True)
            return self.past_group(i)

    def class_body(self, start: int, words: list[str], i: int) -> int:
        enum = "enum" in words[:2]
        end = self.past_group(i) if enum else self.scope(i + 1, in_class=True)
        if self.text(end) != ";" and words[0] != "typedef":
            self.refuse(end, f"an object declared with its class may run host code: {DEVICE_ONLY}")
        while self.text(end) not in (";", ""):
            end += 1
        return end + 1

    def judge(self, at: int, head: list[str], in_class: bool, body: bool) -> None:
        words = _without_prefixes(head)
        if not words or words[0] in ("typedef", "using", "static_assert", "namespace"):
            return
        if _forward_declaration(words):
            return
        excerpt = " ".join(head)[:60]
        host = f"host-only code ({excerpt}): {DEVICE_ONLY}"
        declared = set(_outside_brackets(words))
        types, name, function = _declarator(words)
        if not in_class and function:
            (self.defined.add(name) if body else self.declared.setdefault(name, at))
        if "__host__" in declared and "__device__" not in declared:
            self.refuse(at, host)
        if "constexpr" in declared:
            return
        if body:  # a function's definition
            if not declared & DEVICE:
                self.refuse(at, host)
            return
        if in_class and "static" not in declared:
            return  # a member: it comes to life in a kernel, with its object
        # A variable, or a function's declaration (C++ cannot always tell them
        # apart): it must be device code or a constant, of a built-in type,
        # so that no constructor and no call runs when the kernel is loaded.
        if not declared & DEVICE and "const" not in declared:
            self.refuse(at, host)
        if unknown := [w for w in types if w not in KNOWN_TYPES]:
            self.refuse(
                at,
                f"host-only code ({excerpt}): a variable of type {unknown[0]} outside a "
                f"function may run its constructor when the kernel is loaded; {DEVICE_ONLY}",
            )
        if _calls(words):
            self.refuse(
                at,
                f"host-only code ({excerpt}): an initialiser that calls a function runs "
                f"when the kernel is loaded; {DEVICE_ONLY}",
            )


def _refuse_host_code(lines, filename: str) -> None:
    _Walk(_tokens(lines, filename), filename).file()


def _past(words: list[str], i: int, opening: str, closing: str) -> int:
    """From words[i] == opening, the index past its partner."""
    depth = 0
    while i < len(words):
        depth += (words[i] == opening) - (words[i] == closing)
        i += 1
        if depth == 0:
            break
    return i


def _without_prefixes(head: list[str]) -> list[str]:
    """head without `template <...>` and `extern "C"` in front."""
    i = 0
    while i < len(head):
        if head[i] == "template":
            i = _past(head, i + 1, "<", ">") if head[i + 1 : i + 2] == ["<"] else i + 1
        elif head[i] == "extern" and head[i + 1 : i + 2] and head[i + 1].startswith('"'):
            i += 2
        else:
            break
    return head[i:]


def _outside_brackets(words: list[str]) -> list[str]:
    """words less those inside ( ) and [ ]: a parameter's `const` is not the declaration's."""
    outside, depth = [], 0
    for word in words:
        depth -= word in (")", "]")
        if depth == 0 and word not in (")", "]"):
            outside.append(word)
        depth += word in ("(", "[")
    return outside


def _is_class(words: list[str]) -> bool:
    start = 1 if words[:1] == ["typedef"] else 0
    return words[start : start + 1] in (["struct"], ["class"], ["union"], ["enum"])


def _forward_declaration(words: list[str]) -> bool:
    """struct S;  enum E : int;  enum class E;"""
    if words[:1] in (["struct"], ["class"], ["union"]):
        return len(words) == 2
    if words[:1] == ["enum"]:
        rest = words[2:] if words[1:2] in (["class"], ["struct"]) else words[1:]
        return len(rest) == 1 or rest[1:2] == [":"]
    return False


def _declarator(words: list[str]) -> tuple[list[str], str, bool]:
    """(the names before the declared name: its type and specifiers, the
    declared name, whether it is a function), template arguments and
    __align__(...) and the like left out."""
    names, i = [], 0
    while i < len(words) and words[i] not in ("(", "[", "=", "{...}", ",", ":"):
        if words[i] == "<":
            i = _past(words, i, "<", ">")
        elif words[i] in NOT_CALLS and words[i + 1 : i + 2] == ["("]:
            i = _past(words, i + 1, "(", ")")
        else:
            if re.match(r"[A-Za-z_]", words[i]):
                names.append(words[i])
            i += 1
    function = i < len(words) and words[i] == "(" and bool(names)
    return names[:-1], names[-1] if names else "", function


def _calls(words: list[str]) -> bool:
    """Whether a declaration without a body calls something: a name, or a
    template's `>`, before "(", other than the name of the function declared."""
    seen_declarator = False
    for i in range(1, len(words)):
        before = words[i - 1]
        if words[i] != "(" or not (before == ">" or re.match(r"[A-Za-z_]", before)):
            continue
        if before in NOT_CALLS:
            continue
        depth = sum((w == "(") - (w == ")") for w in words[: i - 1])
        if not seen_declarator and depth == 0 and "=" not in words[:i]:
            seen_declarator = True  # f( in `__device__ float f(int);`
            continue
        return True
    return False
