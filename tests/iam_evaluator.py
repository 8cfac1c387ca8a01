"""IAM's evaluation of identity-based policies, for the tests: a request (action, resource, context keys) is allowed
when a statement allows it and none denies it. Statements match by Action/NotAction and Resource/NotResource
(``*`` and ``?`` wildcards, case-insensitive actions) and by every condition, as AWS documents its policy
evaluation logic: the operators the stacks use (String*, Arn*, Bool, Null, with ``IfExists`` and the
``ForAnyValue:``/``ForAllValues:`` set qualifiers); a key the request lacks fails a condition, except under
``IfExists``, ``Null`` and ``ForAllValues:``. An operator the evaluator does not know fails loudly, so no policy
is judged by a rule it does not implement. Policy variables (``${aws:username}``) are not supported, and fail."""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Request:
    action: str
    resource: str = "*"
    context: Mapping[str, str | Sequence[str]] = field(default_factory=dict)
    principal: str | None = None  # for a trust policy: the service or ARN assuming the role

    def key(self, name: str) -> list[str] | None:
        """The context key's values (keys are case-insensitive), or None when the request has none."""
        for key, value in self.context.items():
            if key.lower() == name.lower():
                return [value] if isinstance(value, str) else list(value)
        return None


def _listed(value) -> list:
    return [value] if isinstance(value, (str, bool)) else list(value)


def _wildcard(pattern: str, value: str, case_sensitive: bool = True) -> bool:
    if "${" in pattern:
        raise NotImplementedError(f"policy variables are not supported: {pattern}")
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, re.DOTALL | (0 if case_sensitive else re.IGNORECASE)) is not None


def _arn_like(pattern: str, value: str) -> bool:
    """ARN operators compare each of the six colon-separated parts, wildcards allowed within a part."""
    wanted, given = pattern.split(":", 5), value.split(":", 5)
    return len(wanted) == len(given) == 6 and all(_wildcard(w, g) for w, g in zip(wanted, given, strict=True))


_OPERATORS = {
    "StringEquals": lambda want, got: want == got,
    "StringNotEquals": lambda want, got: want != got,
    "StringEqualsIgnoreCase": lambda want, got: want.lower() == got.lower(),
    "StringLike": lambda want, got: _wildcard(want, got),
    "StringNotLike": lambda want, got: not _wildcard(want, got),
    "ArnEquals": _arn_like,
    "ArnLike": _arn_like,
    "ArnNotEquals": lambda want, got: not _arn_like(want, got),
    "ArnNotLike": lambda want, got: not _arn_like(want, got),
    "Bool": lambda want, got: str(want).lower() == str(got).lower(),
}
_NEGATED = {"StringNotEquals", "StringNotLike", "ArnNotEquals", "ArnNotLike"}


def _condition_holds(operator: str, key: str, wanted: list, request: Request) -> bool:
    qualifier, _, operator = operator.rpartition(":")
    if_exists = operator.endswith("IfExists")
    operator = operator.removesuffix("IfExists")
    given = request.key(key)
    if operator == "Null":
        return (given is None) == (str(wanted[0]).lower() == "true")
    if operator not in _OPERATORS:
        raise NotImplementedError(f"condition operator {operator} is not supported by this evaluator")
    test = _OPERATORS[operator]
    if given is None:
        return if_exists or qualifier == "ForAllValues"
    if qualifier == "ForAllValues":
        return all(any(test(w, g) for w in wanted) for g in given)
    if operator in _NEGATED:  # a negated operator holds when the value matches none of the listed
        return all(test(w, g) for w in wanted for g in given)
    return any(test(w, g) for w in wanted for g in given)


def _statement_applies(statement: Mapping, request: Request) -> bool:
    if "Principal" in statement:
        principals = statement["Principal"]
        named = ["*"] if principals == "*" else [p for values in principals.values() for p in _listed(values)]
        if request.principal is None or not any(p in ("*", request.principal) for p in named):
            return False
    if "Action" in statement:
        if not any(_wildcard(a, request.action, case_sensitive=False) for a in _listed(statement["Action"])):
            return False
    elif any(_wildcard(a, request.action, case_sensitive=False) for a in _listed(statement["NotAction"])):
        return False
    if "Resource" in statement:
        if not any(_wildcard(r, request.resource) for r in _listed(statement["Resource"])):
            return False
    elif "NotResource" in statement and any(_wildcard(r, request.resource) for r in _listed(statement["NotResource"])):
        return False
    return all(_condition_holds(operator, key, _listed(wanted), request)
               for operator, pairs in statement.get("Condition", {}).items() for key, wanted in pairs.items())


def decision(documents: Iterable[Mapping], request: Request) -> str:
    """``allowed``, ``denied`` (an explicit Deny applies) or ``implicitly denied`` (no statement allows)."""
    allowed = False
    for document in documents:
        statements = document["Statement"]
        for statement in [statements] if isinstance(statements, Mapping) else statements:
            if _statement_applies(statement, request):
                if statement["Effect"] == "Deny":
                    return "denied"
                allowed = True
    return "allowed" if allowed else "implicitly denied"


def allowed(documents: Iterable[Mapping], request: Request) -> bool:
    return decision(list(documents), request) == "allowed"


def key_allows(key_policy: Mapping, identity_policies: Iterable[Mapping], request: Request) -> bool:
    """KMS's rule for a request by ``request.principal`` (a role's ARN): the key policy decides; a statement of it
    that names the key's account (``arn:aws:iam::<account>:root``) leaves the decision to IAM, and then the
    principal's own policies must allow the request too. An explicit deny in either refuses it."""
    account = request.principal.split(":")[4]
    by_name = decision([key_policy], request)
    by_account = decision([key_policy], replace(request, principal=f"arn:aws:iam::{account}:root"))
    own = decision(list(identity_policies), request)
    if "denied" in (by_name, by_account, own):
        return False
    return by_name == "allowed" or (by_account == "allowed" and own == "allowed")
