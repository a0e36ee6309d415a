#!/usr/bin/env python3
"""Shared state outside the platform: a lint for the code that runs on every platform.

Strategies, locks, the WAL model and the CLOG are templates over a platform P and must touch
shared memory, time and the scheduler only through it (core/platform/platform.h): P::Atomic,
P::Shared, P::Semaphore, P::work, P::copy, P::sleep_ns, P::now_ns, P::spin_delay,
P::memory_barrier. The simulated platform charges virtual time only for operations made through
P, so a raw std::atomic, a std::mutex, a mutable static, a sleep or a clock read in that code is
free there, and no test notices: the run verifies, the numbers are wrong. This lint finds them.

Scanned (relative to ROOT): strategies/** and core/wal/*.h, core/locks/*.h, core/clog/*.h;
C++ sources only, *_test.cc excluded. core/platform/ implements P and is not scanned.

Flagged (in code, not in comments or string literals):
  std::atomic, std::atomic_ref, std::atomic_flag, std::atomic_* functions, atomic<T>,
  atomic_thread_fence / atomic_signal_fence, std::mutex (recursive, timed), std::shared_mutex,
  std::condition_variable(_any), std::counting_semaphore, std::binary_semaphore, std::latch,
  std::barrier, std::lock_guard / unique_lock / scoped_lock / shared_lock / call_once /
  once_flag, std::thread / jthread, std::this_thread::*, pthread_*, volatile, thread_local /
  __thread, sched_yield, sleep / usleep / nanosleep / clock_nanosleep / pg_usleep calls, clocks
  (std::chrono::*clock, *_clock::now, clock_gettime, gettimeofday, time(nullptr), rdtsc,
  absl::Now), __atomic_* and __sync_* builtins, static variables that are not const or
  constexpr (function-local, namespace-scope or static data members), and mutable
  namespace-scope variables.

Exemption: a trailing `// shared-state-lint: allow <reason>` on the line exempts every finding
on that line; the reason is required (text up to the end of the line or the next `//`). An
exemption without a reason, or on a line without a finding, is itself reported (construct
`exemption`), so exemptions cannot go stale.

Output: one `file:line: construct: why` per finding (file relative to ROOT), sorted; exit status
1 if there is any, 0 if none, 2 for a bad ROOT. Python 3 standard library only.

Usage: scripts/lint_shared_state.py [ROOT]        (ROOT defaults to the repository root)
"""

import os
import re
import sys

SOURCE_EXTENSIONS = (".h", ".hh", ".hpp", ".hxx", ".cc", ".cpp", ".cxx", ".ipp", ".inc")

# (directory, recursive, extensions) relative to ROOT.
SCAN = [
    ("strategies", True, SOURCE_EXTENSIONS),
    ("core/wal", False, (".h",)),
    ("core/locks", False, (".h",)),
    ("core/clog", False, (".h",)),
]

WHY_ATOMIC = "shared memory outside P is free on the simulated platform; use P::Atomic"
WHY_FENCE = "a fence outside P is free on the simulated platform; use P::memory_barrier()"
WHY_LOCK = "an OS lock outside P is free on the simulated platform; use the model's SpinLock/LWLock over P::Atomic and P::Semaphore"
WHY_THREAD = "OS threads and the host scheduler are outside P; clients are the platform's, waits go through P::Semaphore / P::sleep_ns"
WHY_VOLATILE = "volatile is neither atomic nor charged; use P::Atomic or P::Shared"
WHY_TLS = "thread-local storage follows OS threads, not clients (fibers on the simulated platform); keep per-client state in Proc"
WHY_SLEEP = "a host sleep is not virtual time; use P::sleep_ns"
WHY_CLOCK = "time must come from P::now_ns (virtual time on the simulated platform)"
WHY_BUILTIN = "a compiler atomic builtin is shared memory outside P; use P::Atomic"
WHY_STATIC = "a mutable static is shared by every client and invisible to P; keep shared state in the model as P::Shared / P::Atomic (or make it const/constexpr)"
WHY_GLOBAL = "a mutable namespace-scope variable is shared by every client and invisible to P; keep shared state in the model as P::Shared / P::Atomic (or make it const/constexpr)"

# (regex, why). Earlier rules win where matches overlap; the construct is the matched text
# without spaces and without a trailing "(" or "<".
RULES = [
    (r"\bstd\s*::\s*atomic_(?:thread|signal)_fence\b", WHY_FENCE),
    (r"(?<![\w:])atomic_(?:thread|signal)_fence\b", WHY_FENCE),
    (r"\bstd\s*::\s*atomic_ref\b", WHY_ATOMIC),
    (r"\bstd\s*::\s*atomic_flag\b", WHY_ATOMIC),
    (r"\bstd\s*::\s*atomic_\w+", WHY_ATOMIC),
    (r"\bstd\s*::\s*atomic\b", WHY_ATOMIC),
    (r"(?<![\w:])atomic(?:_ref)?\s*<", WHY_ATOMIC),
    (r"\bstd\s*::\s*(?:recursive_timed_|recursive_|timed_)?mutex\b", WHY_LOCK),
    (r"\bstd\s*::\s*shared_(?:timed_)?mutex\b", WHY_LOCK),
    (r"\bstd\s*::\s*condition_variable(?:_any)?\b", WHY_LOCK),
    (r"\bstd\s*::\s*(?:counting|binary)_semaphore\b", WHY_LOCK),
    (r"\bstd\s*::\s*(?:latch|barrier)\b", WHY_LOCK),
    (r"\bstd\s*::\s*(?:lock_guard|unique_lock|scoped_lock|shared_lock|call_once|once_flag)\b", WHY_LOCK),
    (r"\bstd\s*::\s*this_thread\s*::\s*\w+", WHY_THREAD),
    (r"\bstd\s*::\s*j?thread\b", WHY_THREAD),
    (r"\bpthread_\w+", WHY_THREAD),
    (r"\bsched_yield\b", WHY_THREAD),
    (r"\bvolatile\b", WHY_VOLATILE),
    (r"\b(?:thread_local|__thread)\b", WHY_TLS),
    (r"(?<![\w.>:])(?:::\s*)?(?:usleep|nanosleep|clock_nanosleep|sleep|pg_usleep)\s*\(", WHY_SLEEP),
    (r"\bstd\s*::\s*chrono\s*::\s*\w*clock\b", WHY_CLOCK),
    (r"\b\w*_clock\s*::\s*now\b", WHY_CLOCK),
    (r"\b(?:clock_gettime|gettimeofday|__rdtscp?|_rdtsc|rdtsc)\b", WHY_CLOCK),
    (r"(?<![\w.>])(?:std\s*::\s*)?time(?=\s*\(\s*(?:nullptr|NULL|0)\s*\))", WHY_CLOCK),
    (r"\babsl\s*::\s*(?:Now|GetCurrentTimeNanos)\b", WHY_CLOCK),
    (r"\b__atomic_\w+", WHY_BUILTIN),
    (r"\b__sync_\w+", WHY_BUILTIN),
]
RULES = [(re.compile(rx), why) for rx, why in RULES]

ALLOW_RE = re.compile(r"//\s*shared-state-lint:\s*allow\b(.*)$")


class Finding:
    def __init__(self, path, line, col, construct, why):
        self.path, self.line, self.col, self.construct, self.why = path, line, col, construct, why

    def key(self):
        return (self.path, self.line, self.col, self.construct)

    def text(self):
        return "%s:%d: %s: %s" % (self.path, self.line, self.construct, self.why)


# ---------------------------------------------------------------------------------------------
# Source text without comments and literals


def literal(text, i, quote, out):
    """Appends the string or character literal opening at text[i] with its inside blanked
    (newlines kept); returns the index after it. An unterminated literal ends at the line end."""
    n = len(text)
    j = i + 1
    while j < n and text[j] != quote and text[j] != "\n":
        j += 2 if text[j] == "\\" else 1
    j = min(j, n)
    inside = re.sub(r"[^\n]", " ", text[i + 1:j])
    if j < n and text[j] == quote:
        out.append(quote + inside + quote)
        return j + 1
    out.append(quote + inside)
    return j


def strip_source(text):
    """Returns (code, structural): `text` with comments and the insides of string and character
    literals replaced by spaces (newlines kept, so offsets and line numbers stay); `code` also
    blanks #include lines, `structural` every preprocessor line."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            # Raw string: R"delim( ... )delim" (u8R, uR, UR, LR too).
            d = re.match(r'"([^()\\\s]{0,16})\(', text[i:])
            if d and re.search(r"(?:^|\W)(?:u8|u|U|L)?R$", text[max(0, i - 4):i]):
                end = text.find(")" + d.group(1) + '"', i)
                end = n if end < 0 else end + len(d.group(1)) + 2
                out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:end - 1]) + '"')
                i = end
                continue
            i = literal(text, i, '"', out)
        elif c == "'":
            # A digit separator (1'000'000) or a character literal.
            tok = re.search(r"[\w']*$", text[max(0, i - 64):i]).group(0)
            if tok and tok[0].isdigit():
                out.append(c)
                i += 1
                continue
            i = literal(text, i, "'", out)
        else:
            out.append(c)
            i += 1
    stripped = "".join(out)

    code_lines, struct_lines = [], []
    continuing = False
    blank_include = False
    for line in stripped.split("\n"):
        directive = continuing or line.lstrip().startswith("#")
        if directive and not continuing:
            blank_include = re.match(r"\s*#\s*include\b", line) is not None
        code_lines.append(" " * len(line) if directive and blank_include else line)
        struct_lines.append(" " * len(line) if directive else line)
        continuing = directive and line.rstrip().endswith("\\")
    return "\n".join(code_lines), "\n".join(struct_lines)


# ---------------------------------------------------------------------------------------------
# Tokens for the declaration checks

TOKEN_RE = re.compile(r'\s+|([A-Za-z_]\w*)|(\d[\w.\']*)|("\s*")|(\'\s*\')|(::|->|\[\[|\]\]|.)', re.S)


def tokenize(structural):
    """[(text, line)] of the structural code."""
    tokens = []
    line = 1
    for m in TOKEN_RE.finditer(structural):
        s = m.group(0)
        if s.isspace() or not s:
            line += s.count("\n")
            continue
        tokens.append((s, line))
        line += s.count("\n")
    return tokens


SKIP_PAREN_WORDS = {"alignas", "decltype", "__attribute__", "__declspec", "alignof", "sizeof", "noexcept", "requires"}
CONST_WORDS = {"const", "constexpr"}
LITERAL_START = re.compile(r"^(\d|\"|'|true$|false$|nullptr$|\{|&|-)")


def skip_balanced(tokens, i, open_tok, close_tok):
    """Index just past the token closing tokens[i] (== open_tok)."""
    depth = 0
    while i < len(tokens):
        t = tokens[i][0]
        if t == open_tok:
            depth += 1
        elif t == close_tok:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def declares_mutable_variable(tokens, start):
    """Reads a declaration from tokens[start] (after `static` or at a statement start) up to
    the first (, =, ;, { or [ outside template arguments. Returns True for a variable that is
    not const/constexpr, False for a function, a constant or something else."""
    i = start
    angle = 0
    seen = []
    while i < len(tokens):
        t = tokens[i][0]
        if t in SKIP_PAREN_WORDS and i + 1 < len(tokens) and tokens[i + 1][0] == "(":
            i = skip_balanced(tokens, i + 1, "(", ")")
            continue
        if t == "[[":
            while i < len(tokens) and tokens[i][0] != "]]":
                i += 1
            i += 1
            continue
        if t == "<":
            angle += 1
        elif t == ">" and angle > 0:
            angle -= 1
        elif angle == 0 and t in ("(", "=", ";", "{", "{}", "[", "}"):
            if t == "}":
                return False
            if any(w in CONST_WORDS for w in seen):
                return False
            if t == "(":
                if not seen or seen[-1] == "operator" or (len(seen) > 1 and seen[-2] == "operator"):
                    return False
                nxt = tokens[i + 1][0] if i + 1 < len(tokens) else ")"
                # static Foo x(3): a variable; static int f(int) / f(): a function.
                return bool(LITERAL_START.match(nxt))
            if t == "=" and seen and seen[-1] == "operator":
                return False
            if t in ("{", "{}") and any(w in ("class", "struct", "union", "enum") for w in seen):
                return False
            return True
        elif t in ("class", "struct", "union", "enum") and angle == 0 and not seen:
            seen.append(t)
            i += 1
            continue
        seen.append(t)
        i += 1
    return False


def static_findings(path, tokens):
    for i, (t, line) in enumerate(tokens):
        if t == "static" and declares_mutable_variable(tokens, i + 1):
            yield Finding(path, line, 0, "static", WHY_STATIC)


STATEMENT_SKIP_FIRST = {"using", "typedef", "static_assert", "namespace", "friend", "concept",
                        "static", "extern", "template", "export", "module", "import", "requires"}


def global_findings(path, tokens):
    """Mutable variables declared at namespace scope without `static` (those are static_findings)."""
    found = []
    # Stack of scope kinds: "ns" (namespace, extern "C") or "other" (class, function, init...).
    stack = []
    stmt = []  # tokens of the current statement at namespace scope; "{}" stands for a body
    i = 0
    pending_after_body = []  # per "other" brace opened at namespace scope: the statement goes on

    def at_namespace_scope():
        return all(k == "ns" for k in stack)

    while i < len(tokens):
        t, line = tokens[i]
        if not at_namespace_scope():
            if t == "{":
                stack.append("other")
            elif t == "}":
                stack.pop()
                if at_namespace_scope():
                    if pending_after_body.pop():
                        stmt.append(("{}", line))
                    else:
                        stmt = []
            i += 1
            continue
        if t == "{":
            words = [w for w, _ in stmt]
            if "namespace" in words or (words[:1] == ["extern"] and len(words) == 2):
                stack.append("ns")
                stmt = []
            else:
                body = strip_template_prefix(words)
                if "=" in body:
                    goes_on = True  # an initializer
                elif any(w in ("class", "struct", "union", "enum") for w in body) and "(" not in body:
                    goes_on = True  # a class body: `struct {...} x;` declares x
                elif "(" in body:
                    goes_on = False  # a function body
                else:
                    goes_on = True  # int x{0}
                stack.append("other")
                pending_after_body.append(goes_on)
        elif t == "}":
            if stack:
                stack.pop()
            stmt = []
        elif t == ";":
            f = check_global_statement(path, stmt)
            if f:
                found.append(f)
            stmt = []
        else:
            stmt.append((t, line))
        i += 1
    return found


def strip_template_prefix(words):
    while words[:1] == ["template"] and words[1:2] == ["<"]:
        depth, j = 0, 1
        while j < len(words):
            if words[j] == "<":
                depth += 1
            elif words[j] == ">":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        words = words[j + 1:]
    return words


def check_global_statement(path, stmt):
    """A Finding when the namespace-scope statement `stmt` declares a mutable variable."""
    if not stmt:
        return None
    words = [w for w, _ in stmt]
    lines = [l for _, l in stmt]
    body = strip_template_prefix(words)
    if not body or body[0] in STATEMENT_SKIP_FIRST or "static" in body:
        return None
    offset = len(words) - len(body)
    toks = [(w, lines[offset + j]) for j, w in enumerate(body)]
    if "{}" in body:
        # `struct X {...};` declares nothing; `struct {...} x;` declares x.
        k = body.index("{}")
        if any(w in ("class", "struct", "union", "enum") for w in body[:k]) and "=" not in body[:k]:
            rest = body[k + 1:]
            if not rest or any(w in CONST_WORDS for w in body):
                return None
            return Finding(path, toks[0][1], 0, "namespace-scope variable", WHY_GLOBAL)
    if body[0] in ("class", "struct", "union", "enum") and "{}" not in body and "=" not in body:
        return None  # forward declaration
    if declares_mutable_variable(toks + [(";", toks[-1][1])], 0):
        return Finding(path, toks[0][1], 0, "namespace-scope variable", WHY_GLOBAL)
    return None


# ---------------------------------------------------------------------------------------------


def lint_text(path, text):
    code, structural = strip_source(text)
    raw_lines = text.split("\n")
    findings = []
    for lineno, line in enumerate(code.split("\n"), 1):
        taken = []
        for rx, why in RULES:
            for m in rx.finditer(line):
                span = (m.start(), m.end())
                if any(span[0] < b and a < span[1] for a, b in taken):
                    continue
                taken.append(span)
                construct = re.sub(r"\s+", "", m.group(0)).rstrip("(<").lstrip(":")
                findings.append(Finding(path, lineno, m.start(), construct, why))
    tokens = tokenize(structural)
    findings.extend(static_findings(path, tokens))
    findings.extend(global_findings(path, tokens))

    # Exemptions.
    by_line = {}
    for f in findings:
        by_line.setdefault(f.line, []).append(f)
    kept = []
    exempt = set()
    for lineno, raw in enumerate(raw_lines, 1):
        m = ALLOW_RE.search(raw)
        if not m:
            continue
        reason = m.group(1).split("//")[0].strip()
        if not reason:
            kept.append(Finding(path, lineno, 0, "exemption",
                                "needs a reason: // shared-state-lint: allow <why this is not shared or is charged by P>"))
            continue
        if lineno not in by_line:
            kept.append(Finding(path, lineno, 0, "exemption",
                                "no finding on this line to exempt; remove the comment"))
            continue
        exempt.add(lineno)
    kept.extend(f for f in findings if f.line not in exempt)
    return kept


def scanned_files(root):
    files = []
    for rel_dir, recursive, exts in SCAN:
        base = os.path.join(root, rel_dir)
        if not os.path.isdir(base):
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
            if rel == "core/platform" or rel.startswith("core/platform/"):
                continue
            for name in sorted(filenames):
                if not name.endswith(exts) or re.search(r"_test\.\w+$", name):
                    continue
                files.append(os.path.join(dirpath, name))
            if not recursive:
                dirnames[:] = []
    return files


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and argv[1] in ("-h", "--help")):
        print(__doc__.strip().split("\n\n")[-1], file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isdir(root):
        print("lint_shared_state: %s: not a directory" % root, file=sys.stderr)
        return 2
    files = scanned_files(root)
    if not files:
        print("lint_shared_state: %s: no files to scan (expected strategies/, core/wal/, core/locks/, core/clog/)" % root,
              file=sys.stderr)
        return 2
    findings = []
    for f in files:
        rel = os.path.relpath(f, root).replace(os.sep, "/")
        with open(f, encoding="utf-8", errors="replace") as fh:
            findings.extend(lint_text(rel, fh.read()))
    findings.sort(key=Finding.key)
    for f in findings:
        print(f.text())
    if findings:
        print("lint_shared_state: %d finding%s in %d files scanned" % (len(findings), "" if len(findings) == 1 else "s", len(files)),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
