"""screen.py: what a student file may hold, and what the library built from it may do.

Before the build, each student file is compared with the handout's (the stubs of labs/, made
from solutions/ by tools/stubgen.py) item by item, top-level declaration by declaration, ignoring
comments and spacing:

  - every given item must be there, unchanged and in order; a student function's signature must
    be unchanged, its body is the student's;
  - an item the student added must be static (a helper), a type, an #include of a system header
    or of a header by its bare name, an #if/#endif, or a #define of a name the given code does
    not use (and without ##, which could build one);
  - in what is the student's (bodies and added items) no asm, no #pragma or _Pragma, no
    attribute that runs code before main or redirects a symbol (constructor, ifunc, alias,
    section, ...), and no call that writes the process counters; the same holds inside a
    #define's body, which may not spell an attribute (or a forbidden attribute's name) at all,
    since the code that uses the macro shows only its name.

The build also preprocesses each student file (grade.mk: gcc -E, the object's own flags, in the
sandbox), and the same rules hold for what the compiler sees at the file's lines, what a macro
there expands to included (check_unit: a system header's macro can spell an asm label or an
attribute that the text does not); the handout file's unit says what its given code may hold.

After the build, the lab's library (built in the sandbox) is read with binutils in the sandbox:
it may not define a name that the C library, cmocka, the runtime, the grade hook or an earlier
stage defines (it would replace theirs), may hold no ifunc (code that runs while libraries are
still being loaded), and may not import a function that spawns processes or threads, maps or
protects memory, opens files or loads code, unless the reference (or the given code) imports
it too. Each finding is a named refusal: the lab does not build.
"""
import re
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path


TOKEN = re.compile(r"""
    (?P<directive>^[ \t]*\#(?:[^\n\\]|\\.|\\\n)*)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<number>\.?\d(?:[\w.]|[eEpP][+-])*)
  | (?P<punct>\.\.\.|<<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^!=<>]=|\#\#|[^\s\w])
  | (?P<space>\n|[^\S\n]+)
""", re.X | re.S | re.M)   # space: a newline alone, so that the next line's indentation cannot hide a directive from ^
STUB = re.compile(r"Lab \d+\.\d+: write (\w+) here")
FORBIDDEN_WORDS = {"asm", "__asm", "__asm__", "_Pragma", "uopc_counter_add", "uopc_counter_slot",
                   "uopc_counter_bump", "uopc_counters_reset", "uopc_counters_write_json"}
FORBIDDEN_ATTRIBUTES = {"constructor", "destructor", "ifunc", "alias", "weakref", "section", "visibility",
                        "weak", "symver", "target_clones", "naked", "__constructor__", "__destructor__",
                        "__ifunc__", "__alias__", "__weakref__", "__section__", "__visibility__", "__weak__"}
DENIED_IMPORTS = {
  "fork", "vfork", "clone", "clone3", "pthread_create", "thrd_create", "posix_spawn", "posix_spawnp", "system",
  "popen", "execl", "execlp", "execle", "execv", "execvp", "execvpe", "execve", "execveat", "fexecve", "setsid",
  "setpgid", "daemon", "kill", "killpg", "tgkill", "ptrace", "syscall", "prctl", "seccomp", "unshare", "setns",
  "mprotect", "pkey_mprotect", "mmap", "mmap64", "mremap", "munmap", "dlopen", "dlmopen", "dlsym", "dlvsym",
  "dladdr", "dladdr1", "dlinfo", "dl_iterate_phdr", "_r_debug", "process_vm_readv", "process_vm_writev", "open",
  "open64", "openat", "openat64", "fopen", "fopen64", "freopen", "freopen64", "creat", "creat64", "socket",
  "socketpair", "connect", "sendmsg", "uopc_counters_reset", "uopc_counters_write_json"}
KEYWORDS = {"auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
            "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
            "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
            "volatile", "while", "_Bool", "_Alignas", "_Alignof", "_Atomic", "_Noreturn", "_Static_assert",
            "_Thread_local", "__attribute__", "__attribute", "asm", "__asm__", "__asm", "__extension__"}
SYSTEM_LIBS = ("libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "libcmocka.so.0", "libcrypto.so.3",
               "libgcc_s.so.1")


@dataclass
class Item:
  tokens: tuple          # the item's tokens (comments and spacing dropped; a directive is one token)
  name: str = ""         # a function's name
  head: tuple = ()       # a function's tokens before its body
  body: tuple = ()       # a function's body tokens
  lines: tuple = field(default=(), compare=False)   # the line each token starts on


def tokens(text):
  return [tok for tok, _ in tokens_at(text)]


def tokens_at(text, line=1):
  """[(token, the line it starts on)] of C text, comments and spacing dropped."""
  out = []
  for m in TOKEN.finditer(text):
    kind = m.lastgroup
    if kind == "directive":
      out.append(("#" + " ".join(m.group().replace("\\\n", " ").split())[1:].lstrip(), line))
    elif kind not in ("comment", "space"):
      out.append((m.group(), line))
    line += m.group().count("\n")
  return out


def items(text):
  """The top-level items of a C file: declarations (to their ';'), function definitions (to
  their closing brace) and directives outside any of them."""
  found, cur, at, depth = [], [], [], 0
  for tok, line in tokens_at(text):
    if tok.startswith("#") and depth == 0 and not cur:
      found.append(Item((tok,), lines=(line,)))
      continue
    cur.append(tok)
    at.append(line)
    if tok == "{":
      depth += 1
    elif tok == "}":
      depth = max(depth - 1, 0)
      if depth == 0 and _function_name(cur):
        found.append(_item(cur, at))
        cur, at = [], []
    elif tok == ";" and depth == 0:
      found.append(_item(cur, at))
      cur, at = [], []
  if cur:
    found.append(_item(cur, at))
  return found


def _function_name(toks):
  """The name a definition's tokens define as a function, or "" (a declaration, an initializer)."""
  if "{" not in toks:
    return ""
  head = toks[:toks.index("{")]
  if not head or head[-1] != ")" or "=" in head:
    return ""
  depth = 0
  for j in range(len(head) - 1, -1, -1):
    depth += {")": 1, "(": -1}.get(head[j], 0)
    if depth == 0:
      break
  return head[j - 1] if j > 0 and re.fullmatch(r"[A-Za-z_]\w*", head[j - 1]) else ""


def _item(toks, lines):
  item = Item(tuple(toks), lines=tuple(lines))
  if (name := _function_name(toks)) and toks[-1] == "}":
    k = toks.index("{")
    item.name, item.head, item.body = name, tuple(toks[:k]), tuple(toks[k:])
  return item


# ---- a student file against the handout's -------------------------------------------------------

def check_file(name, text, handout):
  """Refusals (readable lines) for one student file against the handout's text of it."""
  given, mine = items(handout), items(text)
  student = set(STUB.findall(handout))
  given_words = {t for it in given if it.name not in student for t in it.tokens if re.fullmatch(r"\w+", t)}
  refusals, j = [], 0
  for it in given:
    k = next((k for k in range(j, len(mine)) if _same(it, mine[k], student)), None)
    if k is None:
      what = f"the function {it.name}" if it.name else f"'{_short(it.tokens)}'"
      why = "its signature" if it.name in student else "the given code"
      return refusals + [f"{name}: {why} of {what} is missing or changed (the grader grades "
                         f"your function bodies in the handout's file: restore the rest as it was)"]
    refusals += [f"{name}: {r}" for m in mine[j:k] for r in _added(m, given_words)]
    if it.name in student:
      refusals += [f"{name}: in {it.name}: {r}" for r in _forbidden(mine[k].body)]
    j = k + 1
  refusals += [f"{name}: {r}" for m in mine[j:] for r in _added(m, given_words)]
  return refusals


def _same(given, mine, student):
  if given.name and given.name in student:
    return mine.name == given.name and mine.head == given.head
  return mine.tokens == given.tokens


def _added(item, given_words):
  """Refusals for an item the student added."""
  toks = item.tokens
  if toks[0].startswith("#"):
    return _directive(toks[0], given_words)
  kind = "the function " + item.name if item.name else f"'{_short(toks)}'"
  found = _forbidden(toks)
  if toks[0] in ("typedef", "struct", "union", "enum") and not item.name:
    return found
  if "static" not in (item.head or toks):
    found.append(f"{kind} is not static: a helper must be static (a new global name could replace the "
                 f"grader's or a library's)")
  return found


def _directive(d, given_words):
  word = re.match(r"#\s*(\w*)", d).group(1)
  if word == "include":
    target = d.split("include", 1)[1].strip()
    if re.fullmatch(r"<[\w./+-]+>", target) and ".." not in target and not target.startswith("</"):
      return []
    if re.fullmatch(r'"(uopc/)?[\w.+-]+\.h"', target):
      return []
    return [f"{d}: include headers by name only (no path, no ..)"]
  if word in ("if", "ifdef", "ifndef", "elif", "else", "endif"):
    return []
  if word in ("define", "undef"):
    m = re.match(r"#\s*(?:define|undef)\s+(\w+)", d)
    if m and (m.group(1) in given_words or m.group(1) in KEYWORDS):
      return [f"{d}: redefines {m.group(1)}, which the given code uses"]
    if "##" in d:
      return [f"{d}: token pasting (##) is not allowed in a student file"]
    return _macro_body(d)
  return [f"{d}: this directive is not allowed in a student file"]


def _macro_body(d):
  """Refusals for what a #define's body would put in the code where it is used: what the screen
  refuses in code is refused in a macro too, and so is any attribute or forbidden attribute name
  on its own (a macro spelling __attribute__, or constructor, would pass the code's check)."""
  m = re.match(r"#\s*define\s+\w+(\([^)]*\))?(.*)", d, re.S)
  if not m:
    return []
  body = [t.group(0) for t in TOKEN.finditer(m.group(2).replace("\\\n", " "))
          if t.lastgroup not in ("space", "comment")]
  found = [f"{d.strip()[:80]}: in a macro: {r}" for r in _forbidden(body)]
  bad = sorted({t for t in body if t in ("__attribute__", "__attribute", "__declspec") or t in FORBIDDEN_ATTRIBUTES})
  found += [f"{d.strip()[:80]}: a macro may not spell {t} (the screen could not see it where the macro is used)"
            for t in bad]
  return found


def _forbidden(toks):
  """Refusals for what the student's own tokens may not hold."""
  found = []
  for k, t in enumerate(toks):
    if t in FORBIDDEN_WORDS:
      found.append(f"uses {t}" + (" (the counters are the runtime's and the given code's to write)"
                                  if t.startswith("uopc_counter") else ""))
    elif t == "__attribute__" or t == "__attribute":
      bad = [a for a in toks[k + 1:k + 12] if a in FORBIDDEN_ATTRIBUTES]
      found += [f"uses __attribute__(({a})), which the grader does not allow" for a in bad]
    elif t.startswith("#"):
      word = re.match(r"#\s*(\w*)", t).group(1)
      if word in ("pragma", "include", "line"):
        found.append(f"{t}: this directive is not allowed inside a function")
      elif word == "define":
        found += _macro_body(t)
  return sorted(set(found))


def _short(toks, n=60):
  text = " ".join(toks)
  return text if len(text) <= n else text[:n - 3] + "..."


# ---- what the compiler sees -----------------------------------------------------------------------
# The text above cannot see what a system header's macro puts in the code: glibc's __REDIRECT
# (<sys/cdefs.h>, which every libc header includes) is an asm label, <cpuid.h>'s __cpuid inline
# assembly, a library's *_CONSTRUCTOR a constructor. The preprocessed translation unit (gcc -E,
# with the object's own flags: grade.mk) has every expansion in place, each marked with the file
# and line it is expanded at; what the screen refuses in the student's text it refuses there too.

MARKER = re.compile(r'# (\d+) "((?:[^"\\]|\\.)*)"')
UNIT_MAX_BYTES = 64 << 20     # far above any lab's (about 100 KiB to 1 MiB); past it, refused unread
WHY = {"asm": "inline assembly, or an asm label, which renames the symbol a call reaches",
       "counter": "a counter, which is the runtime's and the given code's to write",
       "attribute": "an attribute that runs code before main or renames or replaces a symbol",
       "pragma": "a #pragma (what _Pragma leaves), which can rename or weaken a symbol"}


def unit_tokens(unit, path):
  """[(line, token)] of a preprocessed translation unit (gcc -E's text) that come from the file
  path: its own code and what each macro used there expands to, which gcc marks with path and
  the line of the use (a system header's macro too: its marker adds the flag 3). A #pragma line
  is one token."""
  out, here, line = [], False, 0
  for raw in unit.split("\n"):
    if m := MARKER.match(raw):
      line, here = int(m.group(1)), m.group(2).replace('\\"', '"').replace("\\\\", "\\") == path
      continue
    if here and raw.lstrip().startswith("#"):
      out.append((line, "#" + " ".join(raw.split())[1:].lstrip()))
    elif here:
      out += [(line, tok) for tok, _ in tokens_at(raw)]
    line += 1
  return out


def unit_findings(toks):
  """[(line, kind, what)] of what the screen refuses among a file's tokens of its unit."""
  found = []
  for k, (line, t) in enumerate(toks):
    if t in ("asm", "__asm", "__asm__", "_Pragma"):
      found.append((line, "asm" if "asm" in t else "pragma", t))
    elif t in FORBIDDEN_WORDS:
      found.append((line, "counter", t))
    elif t in ("__attribute__", "__attribute"):
      found += [(line, "attribute", f"__attribute__(({a}))") for a in _attribute_names(toks, k + 1)
                if a in FORBIDDEN_ATTRIBUTES or a.strip("_") in FORBIDDEN_ATTRIBUTES]
    elif t.startswith("#"):
      found.append((line, "pragma", _short((t,), 50)))
  return found


def _attribute_names(toks, k):
  """The names an __attribute__((a, b(x), ...)) starting at toks[k] gives (those at depth 2)."""
  names, depth = [], 0
  for _, t in toks[k:]:
    depth += {"(": 1, ")": -1}.get(t, 0)
    if depth <= 0:
      break
    if depth == 2 and re.fullmatch(r"[A-Za-z_]\w*", t):
      names.append(t)
  return names


def student_lines(text, handout):
  """The lines of a student file that hold the student's own tokens: its function bodies and the
  items it added (for a file check_file has passed: the rest is the handout's, in order)."""
  given, mine = items(handout), items(text)
  student = set(STUB.findall(handout))
  lines, j = set(), 0
  for it in given:
    k = next((k for k in range(j, len(mine)) if _same(it, mine[k], student)), len(mine))
    lines.update(line for m in mine[j:k] for line in m.lines)
    if k < len(mine) and it.name in student:
      lines.update(mine[k].lines[len(mine[k].head):])
    j = k + 1
  lines.update(line for m in mine[j:] for line in m.lines)
  return lines


def check_unit(name, path, unit, handout_unit, mine):
  """Refusals for a student file's translation unit (unit, gcc -E's text; path, the file's name
  in its line markers) against the handout file's (handout_unit): of each thing refused, the
  given code may hold as many as the handout's; mine (student_lines) names the lines to blame."""
  allowed = Counter((kind, what) for _, kind, what in unit_findings(unit_tokens(handout_unit, path)))
  at = {}
  for line, kind, what in unit_findings(unit_tokens(unit, path)):
    at.setdefault((kind, what), []).append(line)
  refusals = []
  for (kind, what), lines in sorted(at.items()):
    if len(lines) > allowed[(kind, what)]:
      where = sorted(set(l for l in lines if l in mine)) or sorted(set(lines))
      shown = ", ".join(map(str, where[:5])) + (", ..." if len(where) > 5 else "")
      refusals.append(f"{name}: line{'s' if len(where) > 1 else ''} {shown}: the compiler sees {what} there, "
                      f"where a macro expands (gcc -E shows it): {WHY[kind]}; the grader does not allow it "
                      f"in student code")
  return refusals


# ---- the built library ----------------------------------------------------------------------------

def symbols(path, which, runner=None):
  """Names of the dynamic symbols of an ELF file: which = "defined" or "undefined". runner runs a
  command (the sandbox, for a student's library); None runs it here (the grader's own files)."""
  argv = ["nm"] + (["-D"] if ".so" in Path(path).name else []) + [f"--{which}-only", "--format=posix", str(path)]
  out = runner(argv) if runner else subprocess.run(argv, capture_output=True, text=True).stdout
  return {line.split()[0].split("@")[0] for line in out.splitlines() if line.split()}


def ifuncs(path, runner):
  out = runner(["readelf", "-W", "--syms", "--dyn-syms", "--relocs", str(path)])
  return sorted({l.split()[-1] for l in out.splitlines() if " IFUNC " in l} |
                ({"(an IRELATIVE relocation)"} if "IRELATIVE" in out else set()))


def system_symbols():
  """What the system libraries the suites link define (found through ldconfig's cache)."""
  found = set()
  cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
  for lib in SYSTEM_LIBS:
    m = re.search(rf"^\s*{re.escape(lib)} \(.*x86-64.*\) => (\S+)$", cache, re.M) or \
        re.search(rf"^\s*{re.escape(lib)} .*=> (\S+)$", cache, re.M)
    if m:
      found |= symbols(m.group(1), "defined")
  return found


_SYSTEM = None


def check_library(lib, others, allowed_imports, runner):
  """Refusals for the student's lab library: others are the grader's libraries it must not
  shadow (the runtime, the hook, earlier stages); allowed_imports what the reference imports."""
  global _SYSTEM
  if _SYSTEM is None:
    _SYSTEM = system_symbols()
  mine = symbols(lib, "defined", runner)
  taken = set(_SYSTEM)
  for other in others:
    taken |= symbols(other, "defined")
  ignore = {"_init", "_fini", "__bss_start", "_edata", "_end"}
  refusals = [f"defines {s}, which a library it is linked with defines: rename it or make it static"
              for s in sorted((mine & taken) - ignore)]
  refusals += [f"holds an ifunc ({s}): code that runs while libraries load is not allowed"
               for s in ifuncs(lib, runner)]
  imports = symbols(lib, "undefined", runner)
  refusals += [f"calls {s}, which student code may not (it spawns, maps memory, opens files or loads code)"
               for s in sorted((imports & DENIED_IMPORTS) - set(allowed_imports))]
  return refusals
