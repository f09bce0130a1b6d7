"""Checks of polyhedral programs: every isl string parsed with islpy, names and parameters."""

from __future__ import annotations

from functools import partial

from dfopt.instance.common import _duplicate_names, _entries, _name, _unknown, _who
from dfopt.instance.names import c_name_fault
from dfopt.schema import found

# == programs (isl) ===========================================================================

_ISL = {"set": ("Set", "an isl set such as '[N] -> { S0[i] : 0 <= i < N }'"),
        "map": ("Map", "an isl map such as '[N] -> { S0[i] -> A[i] }'"),
        "union map": ("UnionMap", "an isl union map such as '[N] -> { S0[i] -> [i, 0]; S1[i] -> [i, 1] }'")}


def _program_issues(program: dict, base: tuple) -> list:
    params = [p for p in program.get("params", []) if isinstance(p, str)] \
        if isinstance(program.get("params"), list) else []
    issues = _duplicate_params(program.get("params"), base)
    arrays = program.get("arrays")
    if not isinstance(arrays, dict):
        arrays = {}
    issues += _name_issues(program, base)
    check = partial(_isl_issues, params=params)
    if isinstance(program.get("context"), str):
        issues += check("set", program["context"], base + ("context",), "")[1]
    statements = _entries(program.get("statements"))
    dup, first = _duplicate_names(statements, base + ("statements",), "statement")
    issues += dup
    for i, statement in statements:
        issues += _statement_issues(statement, base + ("statements", i), check, arrays)
    if isinstance(program.get("schedule"), str):
        umap, more = check("union map", program["schedule"], base + ("schedule",), "")
        issues += more + _scheduled_statement_issues(umap, first, base + ("schedule",), "")
    issues += _sizes_issues(program.get("sizes"), params, base + ("sizes",))
    return issues


def _name_issues(program: dict, base: tuple) -> list:
    """Parameters, arrays, scalars and statements are named as the generated C can use them
    (:mod:`dfopt.instance.names`)."""
    params = program.get("params")
    named: list[tuple[tuple, str, object]] = [
        (("params", i), "parameter", p) for i, p in enumerate(params if isinstance(params, list) else [])]
    for key, what in (("arrays", "array"), ("scalars", "scalar")):
        if isinstance(program.get(key), dict):
            named += [((key, n), what, n) for n in program[key]]
    named += [(("statements", i, "name"), "statement", _name(st)) for i, st in _entries(program.get("statements"))]
    return [(base + path, f"{what} {name!r}: {fault}; the generated C names it as it is, so rename it")
            for path, what, name in named if isinstance(name, str) and (fault := c_name_fault(name))]


def _sizes_issues(sizes, params: list, base: tuple) -> list:
    """Each named dataset gives a value to every parameter and to nothing else."""
    issues = []
    for name, values in (sizes.items() if isinstance(sizes, dict) else ()):
        if not isinstance(values, dict):
            continue
        unknown = sorted(set(values) - set(params))
        missing = [p for p in params if p not in values]
        if unknown:
            issues.append((base + (name, unknown[0]), f"dataset {name!r} sets {unknown} which are not "
                                                       f"parameters (declared: {params})"))
        if missing:
            issues.append((base + (name,), f"dataset {name!r} gives no value to parameter(s) {missing}"))
    return issues


def _duplicate_params(params, base: tuple) -> list:
    seen, issues = set(), []
    for i, p in enumerate(params if isinstance(params, list) else []):
        if isinstance(p, str) and p in seen:
            issues.append((base + ("params", i), f"parameter {p!r} is declared twice"))
        elif isinstance(p, str):
            seen.add(p)
    return issues


def _statement_issues(statement: dict, base: tuple, check, arrays: dict) -> list:
    who = _who("statement", statement, base[-1])
    name, issues = _name(statement), []
    if isinstance(statement.get("domain"), str):
        domain, issues = check("set", statement["domain"], base + ("domain",), who)
        if domain is not None and name is not None and domain.get_tuple_name() != name:
            issues.append((base + ("domain",), f"{who}: the domain's tuple is named "
                                               f"{domain.get_tuple_name()!r}; it must be the statement name {name!r}"))
        if domain is not None:
            issues += _iterator_issues(domain, base + ("domain",), who)
    for kind in ("reads", "writes"):
        texts = statement.get(kind)
        for j, text in enumerate(texts if isinstance(texts, list) else []):
            if isinstance(text, str):
                issues += _access_issues(text, base + (kind, j), who, name, check, arrays)
    if isinstance(statement.get("schedule"), str):
        umap, more = check("union map", statement["schedule"], base + ("schedule",), who)
        issues += more + _scheduled_statement_issues(umap, {name: 0} if name else None,
                                                     base + ("schedule",), who)
    return issues


def _iterator_issues(domain, path: tuple, who: str) -> list:
    """The domain's iterators become the parameters of the statement's C macro."""
    import islpy as isl

    names = [domain.get_dim_name(isl.dim_type.set, i) for i in range(domain.dim(isl.dim_type.set))]
    return [(path, f"{who}: iterator {n!r}: {fault}; the statement's C macro takes it as a parameter, so rename it")
            for n in names if n and (fault := c_name_fault(n))]


def _access_issues(text: str, path: tuple, who: str, name: str | None, check, arrays: dict) -> list:
    access, issues = check("map", text, path, who)
    if access is None:
        return issues
    import islpy as isl

    source, target = access.get_tuple_name(isl.dim_type.in_), access.get_tuple_name(isl.dim_type.out)
    if source is None:
        issues.append((path, f"{who}: expected an access from the statement's tuple such as "
                             f"'{{ {name or 'S0'}[i] -> A[i] }}', got {found(text)} (its domain tuple has no name)"))
    elif name is not None and source != name:
        issues.append((path, f"{who}: the access starts from {source!r}; it must start from the statement {name!r}"))
    if arrays and target not in arrays:
        issues.append((path, f"{who}: the access names {_unknown('array', str(target), arrays)}"))
    return issues


def _scheduled_statement_issues(umap, statements: dict | None, path: tuple, who: str) -> list:
    if umap is None or statements is None:
        return []
    sets = umap.domain().get_set_list()
    names = [sets.get_at(i).get_tuple_name() for i in range(sets.n_set())]
    return [(path, f"{_prefix(who)}the schedule maps {_unknown('statement', str(n), statements)}")
            for n in names if n not in statements]


def _isl_issues(kind: str, text: str, path: tuple, who: str, params: list) -> tuple:
    """Parse ``text`` as an isl object of ``kind``: (object or None, issues)."""
    import islpy as isl

    cls_name, example = _ISL[kind]
    try:
        obj = getattr(isl, cls_name)(text)
    except isl.Error as err:
        return None, [(path, f"{_prefix(who)}expected {example}, got {found(text)} "
                             f"(isl: {_isl_complaint(err, kind)})")]
    space = obj.get_space()
    used = [space.get_dim_name(isl.dim_type.param, i) for i in range(space.dim(isl.dim_type.param))]
    undeclared = [p for p in used if p not in params]
    if not undeclared:
        return obj, []
    declared = ", ".join(params) or "none"
    listing = ", ".join(repr(p) for p in undeclared)
    return obj, [(path, f"{_prefix(who)}uses parameter(s) {listing} that /program/params does not declare "
                        f"(declared: {declared})")]


def _prefix(who: str) -> str:
    return f"{who}: " if who else ""


def _isl_complaint(err: Exception, kind: str) -> str:
    text = str(err)
    if " failed: " in text:
        text = text.split(" failed: ", 1)[1]
    if " in /" in text:
        text = text.rsplit(" in /", 1)[0]
    if text.startswith("Assertion"):
        return f"the text is not a single {kind}"
    return text
