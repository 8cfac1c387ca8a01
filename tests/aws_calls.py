"""The IAM action and resource of each AWS call a sync makes: botocore's calls (Glue, and the lock's S3 calls)
recorded from its events, and Spark's s3a requests as the local endpoint's proxy saw them."""
from __future__ import annotations

import json
import re
from contextlib import contextmanager
from urllib.parse import parse_qs, unquote, urlsplit

REGION, ACCOUNT = "us-east-1", "123456789012"
GLUE = f"arn:aws:glue:{REGION}:{ACCOUNT}"
S3_OPERATIONS = {"GetObject": "s3:GetObject", "HeadObject": "s3:GetObject", "PutObject": "s3:PutObject",
                 "CopyObject": "s3:PutObject",
                 "DeleteObject": "s3:DeleteObject", "ListObjectsV2": "s3:ListBucket", "HeadBucket": "s3:ListBucket"}


def glue_resources(params: dict) -> list[str]:
    """The resources Glue authorizes a call on: the catalog, the database and the table it names."""
    database = params.get("DatabaseName") or (params.get("DatabaseInput") or {}).get("Name") or params.get("Name")
    if "DatabaseName" not in params:  # GetDatabase, CreateDatabase: Name is the database
        return [f"{GLUE}:catalog", f"{GLUE}:database/{database}"]
    table = params.get("TableName") or (params.get("TableInput") or {}).get("Name") or params.get("Name") or "*"
    return [f"{GLUE}:catalog", f"{GLUE}:database/{database}", f"{GLUE}:table/{database}/{table}"]


@contextmanager
def botocore_calls(session):
    """Records (action, resource) of every call of the clients ``session`` (boto3's default) makes."""
    calls: list[tuple[str, str]] = []

    def record(params, model, **_):
        service, operation = model.service_model.endpoint_prefix, model.name
        if service == "glue":
            calls.extend((f"glue:{operation}", resource) for resource in glue_resources(params))
        elif service == "s3":
            resource = f"arn:aws:s3:::{params['Bucket']}" + (f"/{params['Key']}" if "Key" in params else "")
            if operation == "CopyObject":  # publish: read the staged file, write the lake's
                source = params["CopySource"]  # botocore may have made it "bucket/key" already
                source = f"{source['Bucket']}/{source['Key']}" if isinstance(source, dict) else unquote(source)
                calls.append(("s3:GetObject", f"arn:aws:s3:::{source.split('?')[0]}"))
            calls.append((S3_OPERATIONS[operation], resource))
        else:
            calls.append((f"{service}:{operation}", "*"))

    session.events.register("before-parameter-build", record)
    try:
        yield calls
    finally:
        session.events.unregister("before-parameter-build", record)


def glue_request_calls(request: dict) -> list[tuple[str, str]]:
    """(action, resource) of one Glue request (JSON protocol: the operation in X-Amz-Target, the parameters in the
    body), as Glue authorizes it: on the catalog, the database and the table it names."""
    target = next(value for name, value in request["headers"].items() if name.lower() == "x-amz-target")
    params = json.loads(request["body"] or b"{}")
    return [(f"glue:{target.rsplit('.', 1)[-1]}", resource) for resource in glue_resources(params)]


def s3_request_calls(request: dict) -> list[tuple[str, str]]:
    """(action, resource) of one S3 REST request (path-style): method, path, headers, body."""
    method, url = request["method"], urlsplit(request["path"])
    bucket, _, key = url.path.lstrip("/").partition("/")
    key, query = unquote(key), parse_qs(url.query, keep_blank_values=True)
    headers = {name.lower(): value for name, value in request["headers"].items()}
    bucket_arn = f"arn:aws:s3:::{bucket}"
    if not key:
        if method == "POST" and "delete" in query:  # a batch delete names its keys in the body
            return [("s3:DeleteObject", f"{bucket_arn}/{unquote(k)}")
                    for k in re.findall(r"<Key>(.*?)</Key>", request["body"].decode())]
        if "uploads" in query:
            return [("s3:ListBucketMultipartUploads", bucket_arn)]
        if "location" in query:
            return [("s3:GetBucketLocation", bucket_arn)]
        return [("s3:ListBucket", bucket_arn)]  # GET ?list-type=2, HEAD bucket
    object_arn = f"{bucket_arn}/{key}"
    if "uploadId" in query:
        return [({"DELETE": "s3:AbortMultipartUpload", "GET": "s3:ListMultipartUploadParts"}.get(method, "s3:PutObject"),
                 object_arn)]
    if method in ("GET", "HEAD"):
        return [("s3:GetObject", object_arn)]
    if method == "DELETE":
        return [("s3:DeleteObject", object_arn)]
    copied = headers.get("x-amz-copy-source")
    source = [("s3:GetObject", "arn:aws:s3:::" + unquote(copied).lstrip("/"))] if copied else []
    return [("s3:PutObject", object_arn), *source]  # PUT, POST ?uploads


def request_calls(request: dict) -> list[tuple[str, str, dict]]:
    """(action, resource, condition keys) of one request the proxy passed on, Glue's or S3's: a listing's prefix
    (``s3:prefix``), which a policy may condition ListBucket on."""
    if any(name.lower() == "x-amz-target" for name in request["headers"]):
        return [(action, resource, {}) for action, resource in glue_request_calls(request)]
    prefix = parse_qs(urlsplit(request["path"]).query).get("prefix")
    return [(action, resource, {"s3:prefix": prefix[0]} if action == "s3:ListBucket" and prefix else {})
            for action, resource in s3_request_calls(request)]


def run_job_flow_authorizations(request: dict, bucket: str, template_key: str, profile_roles: dict[str, str]):
    """What IAM authorizes for ``segment-lake replay-on-emr`` sending ``request`` (RunJobFlow's parameters) after
    reading its template: the template listed and read, RunJobFlow and the tags it sets (aws:RequestTag/...), and
    each role passed to the service that receives it: the service role to EMR, the role of the instance profile
    (``profile_roles``: profile name -> role name) to EC2, an autoscaling role to Application Auto Scaling."""
    from iam_evaluator import Request

    tags = {f"aws:RequestTag/{tag['Key']}": tag["Value"] for tag in request.get("Tags", [])}
    tags["aws:TagKeys"] = [tag["Key"] for tag in request.get("Tags", [])]
    role = f"arn:aws:iam::{ACCOUNT}:role/"
    passed = [(request["ServiceRole"], "elasticmapreduce.amazonaws.com"),
              (profile_roles[request["JobFlowRole"]], "ec2.amazonaws.com")]
    if request.get("AutoScalingRole"):
        passed.append((request["AutoScalingRole"], "application-autoscaling.amazonaws.com"))
    return [
        Request("s3:ListBucket", f"arn:aws:s3:::{bucket}", {"s3:prefix": template_key.rsplit("/", 1)[0] + "/"}),
        Request("s3:GetObject", f"arn:aws:s3:::{bucket}/{template_key}"),
        Request("elasticmapreduce:RunJobFlow", "*", tags),
        Request("elasticmapreduce:AddTags", f"arn:aws:elasticmapreduce:{REGION}:{ACCOUNT}:cluster/j-REPLAY", tags),
        *(Request("iam:PassRole", role + name, {"iam:PassedToService": service}) for name, service in passed),
    ]
