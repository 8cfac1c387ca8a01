"""Scan synthesized CDKTF stacks with checkov and lint their IAM policies with parliament.

    python -m segment_data_lake_scan cdktf.out [more stacks or cdk.tf.json files]
        [--skips my-skips.json ...] [--iam-findings my-findings.json ...]
    (or the command segment-data-lake-scan; needs the extra: pip install 'segment-data-lake-cdktf[scan]')

checkov's terraform_json runner ignores inline skips and exits 0 when it
cannot parse a file, so this wrapper:
  * runs checkov with this package's custom checks (checks/),
  * accepts a failure only if a documented skip covers it: this package's
    (accepted-skips.json: check id, the role of the resources it applies to,
    reason), for the resources the constructs marked with that role (by
    address, in the stack's "//.segment_data_lake_scan"), or one of a user's
    files, which add to them and may also name resources by address
    ("resources": ["aws_s3_bucket.logs*"]); fails on every other failure,
  * fails unless each stack was parsed and a non-zero number of checks ran,
  * lints every IAM identity policy with parliament, failing on findings not
    documented as accepted.
Exit status 0 only when every stack is clean.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys
from pathlib import Path

POLICIES_DIR = Path(__file__).resolve().parent
CHECKS_DIR = POLICIES_DIR / "checks"
MODULE_SKIPS, MODULE_FINDINGS = POLICIES_DIR / "accepted-skips.json", POLICIES_DIR / "accepted-iam-findings.json"
MARKS_KEY = "segment_data_lake_scan"  # constructs/segment_data_lake/scan_marks.py
IAM_POLICY_TYPES = ("aws_iam_policy", "aws_iam_role_policy", "aws_iam_user_policy", "aws_iam_group_policy")

# Stand-ins for Terraform references, so that parliament sees well-formed ARNs.
_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_STAND_INS = (
    (re.compile(r"partition$"), "aws"),
    (re.compile(r"account_id$"), "123456789012"),
    (re.compile(r"aws_region\.[^.]+\.(name|region|id)$"), "us-east-1"),
    (re.compile(r"aws_s3_bucket\.[^.]+\.arn$"), "arn:aws:s3:::example-bucket"),
    (re.compile(r"aws_s3_bucket\.[^.]+\.(bucket|id)$"), "example-bucket"),
    (re.compile(r"aws_iam_role\.[^.]+\.arn$"), "arn:aws:iam::123456789012:role/example"),
    (re.compile(r"aws_kms_key\.[^.]+\.arn$"), "arn:aws:kms:us-east-1:123456789012:key/example"),
    (re.compile(r"aws_emr_cluster\.[^.]+\.arn$"), "arn:aws:elasticmapreduce:us-east-1:123456789012:cluster/j-EXAMPLE"),
)


class ScanError(Exception):
    """The scan could not be trusted or found problems; the message says which."""


def stack_files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            found = sorted(p for p in path.rglob("cdk.tf.json") if ".terraform" not in p.parts)
            if not found:
                raise ScanError(f"no cdk.tf.json under {path}: run `cdktf synth` (or `make synth`) first")
            files.extend(found)
        else:
            raise ScanError(f"{path} does not exist: pass a synthesized stack folder or its cdk.tf.json")
    return files


def resource_types(stack: dict) -> dict[str, str]:
    """Logical resource name to resource type."""
    return {name: rtype for rtype, blocks in stack.get("resource", {}).items() for name in blocks}


def _address(record: dict, types: dict[str, str]) -> str:
    """``<type>.<logical name>`` of the resource a checkov record is about."""
    resource = record.get("resource", "")
    name = resource.rsplit(".", 1)[-1]
    return f"{types.get(name, resource.partition('.')[0])}.{name}"


def run_checkov(stack_files: list[Path]) -> dict[Path, dict]:
    """checkov's records of each stack file, from one run over them all (its start-up, about 5 CPU-s, is most of
    a stack's scan): ``{file: {"passed": [...], "failed": [...], "parsed": bool}}``."""
    python_path = os.pathsep.join(filter(None, [str(CHECKS_DIR), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, BC_SKIP_MAPPING="TRUE", PYTHONPATH=python_path)
    # checkov's module, not its script: an environment that borrows checkov has no script beside its python
    checkov = ("import sys, warnings; from checkov.main import Checkov; "
               "warnings.simplefilter('ignore', SyntaxWarning); sys.exit(Checkov().run())")
    files = [arg for stack_file in stack_files for arg in ("--file", str(stack_file))]
    result = subprocess.run(
        [sys.executable, "-c", checkov, *files, "--framework", "terraform_json", "--output", "json",
         "--external-checks-dir", str(CHECKS_DIR), "--soft-fail", "--skip-download"],
        capture_output=True, text=True, env=env)
    try:
        report = json.loads(result.stdout)
    except ValueError:
        raise ScanError(f"checkov gave no report for {', '.join(map(str, stack_files))} (exit {result.returncode}): "
                        f"{(result.stderr.strip().splitlines() or ['no output'])[-1]}") from None
    reports = report if isinstance(report, list) else [report]
    results = next((r for r in reports if r.get("check_type") == "terraform_json"), {}).get("results", {})
    unparsed = {os.path.realpath(path) for path in results.get("parsing_errors", [])}
    by_file = {os.path.realpath(stack_file): {"passed": [], "failed": [], "parsed": True} for stack_file in stack_files}
    for outcome in ("passed", "failed"):
        for record in results.get(f"{outcome}_checks", []):
            by_file[os.path.realpath(record["file_abs_path"])][outcome].append(record)
    for path in unparsed & by_file.keys():
        by_file[path]["parsed"] = False
    return {stack_file: by_file[os.path.realpath(stack_file)] for stack_file in stack_files}


def checkov_problems(stack_file: Path, stack: dict, records: dict, skips: list[dict]) -> tuple[list[str], dict]:
    """The failures of ``records`` (run_checkov's, for ``stack_file``) that no skip accepts, and the counts."""
    if not records["parsed"]:
        raise ScanError(f"checkov could not parse {stack_file}: fix the file or re-synthesize it")
    types = resource_types(stack)
    if not types or not records["passed"] + records["failed"]:
        raise ScanError(f"checkov ran no checks on {stack_file}: is it a synthesized stack with resources?")
    problems = []
    accepted = 0
    marks = stack.get("//", {}).get(MARKS_KEY, {})  # role -> addresses, written by the constructs
    for record in records["failed"]:
        address = _address(record, types)
        if any(s["check"] == record["check_id"] and (address in marks.get(s.get("applies_to"), ()) or any(
                fnmatch.fnmatchcase(address, pattern) for pattern in s.get("resources", ()))) for s in skips):
            accepted += 1
            continue
        problems.append(f"{stack_file}: {record['check_id']} {record.get('check_name', '')} failed for "
                        f"{record.get('resource')}")
    return problems, {"passed": len(records["passed"]), "failed": len(records["failed"]), "accepted": accepted}


def _stand_in(match: re.Match) -> str:
    reference = match.group(1)
    for pattern, replacement in _STAND_INS:
        if pattern.search(reference):
            return replacement
    return "example"


def iam_policies(stack: dict) -> list[tuple[str, str]]:
    """(resource address, policy JSON with references replaced) of each IAM identity policy."""
    found = []
    for rtype in IAM_POLICY_TYPES:
        for name, block in stack.get("resource", {}).get(rtype, {}).items():
            policy = block.get("policy")
            if isinstance(policy, str):
                found.append((f"{rtype}.{name}", _REFERENCE.sub(_stand_in, policy)))
    return found


def parliament_problems(stack_file: Path, stack: dict, accepted: list[dict]) -> tuple[list[str], int]:
    from parliament import analyze_policy_string

    problems = []
    policies = iam_policies(stack)
    for address, policy in policies:
        for finding in analyze_policy_string(policy).findings:
            if any(a["issue"] == finding.issue and fnmatch.fnmatch(address, a.get("resource", "*")) for a in accepted):
                continue
            problems.append(f"{stack_file}: parliament {finding.issue} in {address}: {finding.detail}")
    return problems, len(policies)


def _entries(files: list[Path]) -> list[tuple[Path, dict]]:
    entries = []
    for path in files:
        try:
            entries += [(path, entry) for entry in json.loads(path.read_text())]
        except (OSError, ValueError) as error:
            raise ScanError(f"cannot read {path}: {error}: pass a JSON list") from None
    return entries


def scan(paths: list[str], skips_files: list[Path], findings_files: list[Path]) -> list[str]:
    """Every problem of the stacks; ``skips_files`` and ``findings_files`` add to this package's own."""
    skips = []
    for path, skip in _entries([MODULE_SKIPS, *skips_files]):
        if not skip.get("check") or not skip.get("reason") or not (skip.get("applies_to") or skip.get("resources")):
            raise ScanError(f"skip {skip!r} in {path} needs a 'check', a 'reason', and an 'applies_to' (a role the "
                            f"constructs mark) or 'resources' (addresses, '*' allowed)")
        skips.append(skip)
    accepted_findings = [finding for _, finding in _entries([MODULE_FINDINGS, *findings_files])]
    problems = []
    stacks = {}
    for stack_file in stack_files(paths):
        try:
            stacks[stack_file] = json.loads(stack_file.read_text())
        except ValueError as error:
            raise ScanError(f"could not parse {stack_file} ({error}): re-synthesize it") from None
    records = run_checkov(list(stacks))
    for stack_file, stack in stacks.items():
        found, counts = checkov_problems(stack_file, stack, records[stack_file], skips)
        lint, linted = parliament_problems(stack_file, stack, accepted_findings)
        problems += found + lint
        print(f"{stack_file}: checkov passed {counts['passed']}, failed {counts['failed']} "
              f"({counts['accepted']} accepted skips); parliament linted {linted} policies, "
              f"{len(lint)} findings", file=sys.stderr)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="segment-data-lake-scan",
                                     description="Scan synthesized stacks with checkov and parliament.")
    parser.add_argument("paths", nargs="+", help="stack folders (searched for cdk.tf.json) or cdk.tf.json files")
    parser.add_argument("--skips", type=Path, action="append", default=[], metavar="FILE",
                        help="checkov failures to accept, in addition to the module's own: a JSON list of {check, "
                             "reason, and resources (addresses, '*' allowed) or applies_to (a role the constructs mark)}")
    parser.add_argument("--iam-findings", type=Path, action="append", default=[], metavar="FILE",
                        help="parliament findings to accept, in addition to the module's own: a JSON list of {issue, "
                             "resource (an address, '*' allowed), reason}")
    args = parser.parse_args(argv)
    try:
        problems = scan(args.paths, args.skips, args.iam_findings)
    except ScanError as error:
        print(f"scan failed: {error}", file=sys.stderr)
        return 2
    for problem in problems:
        print(problem)
    if problems:
        print(f"scan failed: {len(problems)} problem(s) beyond the documented skips", file=sys.stderr)
        return 1
    print("scan passed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
