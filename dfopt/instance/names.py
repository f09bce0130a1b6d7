"""What each backend accepts as a name, and where the instance's names go.

* **isl and C** (``problem: schedule``): parameter, array, scalar and statement names and the
  iterators of every statement domain are written into isl strings and, as they are, into the
  generated C (``#define N 30``, ``static double A[N];``, ``#define S0(t, i) ...``). They must be
  C identifiers (``[A-Za-z_][A-Za-z0-9_]*``, which isl accepts too), not C keywords and not a name
  the generated file itself defines or calls (:data:`C_RESERVED`, and anything starting with
  ``dfopt_``): :func:`c_name_fault` says why one is refused, and the instance check reports it
  with its pointer.
* **MLIR and HLS C++** (``mapping``, ``pipeline``): kernel, task, tensor and operator names are
  free text; the emitters write ASCII identifiers of their own: every character outside
  ``[A-Za-z0-9_]`` becomes ``_``; MLIR symbols that start with a digit get an ``s_`` prefix and
  repeats a numbered suffix; HLS names that start with a digit get a ``_`` prefix, C++ keywords
  a ``_`` suffix, and two kernels that map to one C++ name are a CodegenError naming the name.
  The original names stay in comments and in ``design.json``.

>>> c_name_fault("A"), c_name_fault("int"), c_name_fault("a b"), c_name_fault("dfopt_x")
(None, 'a C keyword', 'not a C identifier ([A-Za-z_][A-Za-z0-9_]*)', 'reserved for the generated code (dfopt_...)')
"""

from __future__ import annotations

import re

_C_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

#: C11 keywords (and the C99 / C23 spellings a compiler may take as one)
C_KEYWORDS = frozenset("""
    auto break case char const continue default do double else enum extern float for goto if inline int
    long register restrict return short signed sizeof static struct switch typedef union unsigned void
    volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert
    _Thread_local bool true false alignas alignof static_assert thread_local nullptr typeof constexpr
""".split())

#: C++17 keywords and alternative tokens beyond C's (the HLS emitter writes C++)
CXX_KEYWORDS = C_KEYWORDS | frozenset("""
    and and_eq asm bitand bitor catch char8_t char16_t char32_t class compl concept const_cast consteval
    constinit co_await co_return co_yield decltype delete dynamic_cast explicit export friend mutable
    namespace new noexcept not not_eq operator or or_eq private protected public reinterpret_cast requires
    static_cast template this throw try typeid typename using virtual wchar_t xor xor_eq
""".split())

#: what the generated C defines or calls beside the program's own names (dfopt.codegen.poly)
C_RESERVED = frozenset("""
    main floord min max kernel_body printf fprintf fwrite stdout stderr stdin size_t NULL
    sqrt exp pow fabs log sin cos tanh malloc free clock_gettime timespec omp_get_wtime
""".split())


def c_name_fault(name: str) -> str | None:
    """Why ``name`` cannot be a name of the generated C (None when it can)."""
    if not _C_IDENT.match(name):
        return "not a C identifier ([A-Za-z_][A-Za-z0-9_]*)"
    if name in C_KEYWORDS:
        return "a C keyword"
    if name.startswith("dfopt_"):
        return "reserved for the generated code (dfopt_...)"
    if name in C_RESERVED:
        return "a name the generated C defines or calls"
    return None
