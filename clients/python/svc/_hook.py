"""Implementation of the ``svc.rufid`` import hook (decisions.md, "Import statements").

``from svc.rufid import <rufid_short> as name`` (or ``_<rufid_short>`` when the short RUFID starts
with a digit) resolves the RUFID on the default node (:func:`svc.configure`, else ``SVC_URL`` /
``SVC_TOKEN`` / ``SVC_NAMESPACE``) and binds ``name`` to a callable that executes it there.
"""

from __future__ import annotations

from typing import Optional

from .client import Client, RemoteFunction, get_client
from .errors import InvalidRufidError, RufidNotFoundError, SvcError
from .rufid_algo import is_short_rufid

MODULE = "svc.rufid"


def short_of(name: str) -> str:
    """The short RUFID named by an attribute of ``svc.rufid`` (``X`` or ``_X``); 1001 otherwise."""
    if is_short_rufid(name):
        return name
    if name.startswith("_") and is_short_rufid(name[1:]):
        return name[1:]
    raise InvalidRufidError(
        "%r is not a short RUFID (12 letters or digits, optionally preceded by '_')" % name,
        details={"rufid": name},
    )


def load(name: str, client: Optional[Client] = None) -> RemoteFunction:
    """Resolves ``name`` and returns the callable; every failure is an ImportError."""
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError("module %r has no attribute %r" % (MODULE, name))
    try:
        short = short_of(name)
    except InvalidRufidError as e:
        raise ImportError("cannot import name %r from %r: not a RUFID [1001 INVALID_RUFID]" % (name, MODULE),
                          name=MODULE) from e
    node = client if client is not None else get_client()
    try:
        resolution = node.resolve(short)
    except RufidNotFoundError as e:
        raise ImportError("cannot import name %r from %r: RUFID %s not found on %s [1002 RUFID_NOT_FOUND]"
                          % (name, MODULE, short, node.url), name=MODULE) from e
    except SvcError as e:
        raise ImportError("cannot import name %r from %r: resolving RUFID %s on %s failed: %s"
                          % (name, MODULE, short, node.url, e), name=MODULE) from e
    return RemoteFunction.of_resolution(node, short, resolution)
