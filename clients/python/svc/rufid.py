"""Direct imports of stored functions: ``from svc.rufid import <rufid_short> as add``.

A short RUFID that starts with a digit is not a Python identifier; import it as ``_<rufid_short>``
(both forms are accepted). The function is resolved on the node configured with
:func:`svc.configure` (else ``SVC_URL``/``SVC_TOKEN``/``SVC_NAMESPACE``) when it is imported; calling
it executes it there and returns its result. An unknown RUFID is an ImportError naming it.

This module deliberately defines nothing else: every other name is looked up as a RUFID (PEP 562).
"""


def __getattr__(name):
    from svc._hook import load

    return load(name)


def __dir__():
    return []
