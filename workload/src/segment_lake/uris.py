"""The lake's URIs as text: local paths as ``file://`` URIs, joined, shown and made relative. No I/O (storage.py
does that), so that the settings, the layout and the command line parse without Spark."""
from __future__ import annotations

import os
from urllib.parse import urlparse


def normalize_uri(uri: str) -> str:
    """Local paths become ``file://`` URIs; a trailing slash is dropped."""
    if "://" not in uri:
        uri = "file://" + os.path.abspath(uri)
    return uri.rstrip("/") if not uri.endswith("://") else uri


def join(uri: str, *parts: str) -> str:
    return "/".join([uri.rstrip("/"), *(p.strip("/") for p in parts)])


def shown(uri: str) -> str:
    """A local file as a path, anything else as its URI."""
    return uri[len("file:"):].replace("///", "/", 1) if uri.startswith("file:") else uri


def relative_path(uri: str, base: str) -> str:
    """``uri``'s path below ``base`` (``file:/x`` and ``file:///x`` name the same place)."""
    path, base_path = urlparse(uri).path, urlparse(base).path.rstrip("/") + "/"
    if not path.startswith(base_path):
        raise ValueError(f"{uri} is not below {base}")
    return path[len(base_path):]


def is_hidden(name: str) -> bool:
    """Hadoop and Spark bookkeeping (``_SUCCESS``, ``.crc``) is not data."""
    return name.startswith(("_", "."))
