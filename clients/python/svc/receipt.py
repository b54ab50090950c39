"""Execution receipts, format version 1 (docs/receipts.md): verification, as the daemon does it.

    from svc.receipt import verify_receipt, ReceiptError
    verified = verify_receipt(receipt, ca_cert_pem=open("ca.crt").read(), args={"a": 2, "b": 3}, result=5)

Verification needs the ``cryptography`` package (Ed25519 and X.509): the ``verify`` extra of the svc-node-client distribution (``pip install "./clients/python[verify]"``).
The digest helpers (``arguments_digest``, ``result_digest``, ``lockfile_digest``) need nothing.
The daemon (``src/core/receipt.ts``) and the Go client implement the same checks; all three are
checked against ``test/vectors/receipts-v1.json``.
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, Iterable, Mapping, Optional, Tuple, Union

from .canonical_json import CanonicalJsonError, canonical_json, json_digest
from .errors import ValidationError
from .rufid_algo import FULL_RUFID_RE, base62

__all__ = [
    "RECEIPT_VERSION", "RECEIPT_SIGNING_PREFIX", "FAILURES", "ReceiptError", "VerifiedReceipt",
    "verify_receipt", "arguments_digest", "result_digest", "lockfile_digest", "receipt_signing_bytes",
    "receipt_digest", "ed25519_key_of_peer_id",
]

RECEIPT_VERSION = 1
RECEIPT_SIGNING_PREFIX = b"svc-node/receipt/v1\n"
FAILURES = (
    "malformed", "bad_signature", "foreign_ca", "not_certified", "peer_id_mismatch", "not_yet_valid",
    "expired", "revoked", "arguments_mismatch", "result_mismatch",
)

_PAYLOAD_MEMBERS = (
    "receipt_version", "execution_id", "rufid", "content_digest", "lockfile_digest", "arguments_digest", "status",
    "result_digest", "error_code", "limits", "started_at", "finished_at", "peer_id",
)
_RECEIPT_MEMBERS = frozenset(_PAYLOAD_MEMBERS + ("certificate", "signature"))
_LIMIT_MEMBERS = ("timeout_ms", "cpu_ms", "memory_mb")
_STATUSES = ("success", "error", "timeout")
_EXECUTION_ID = re.compile(r"ex_[0-9A-HJKMNP-TV-Z]{26}")
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")
_SIGNATURE = re.compile(r"[A-Za-z0-9_-]{86}")
_PEM_CERTIFICATE = re.compile(r"[ \t\r\n]*-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+-----END CERTIFICATE-----[ \t\r\n]*")
_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_ED25519_PEER_ID_PREFIX = bytes([0x00, 0x24, 0x08, 0x01, 0x12, 0x20])
_MAX_SAFE_INTEGER = 2**53 - 1
_UNSET: Any = object()


class ReceiptError(ValidationError):
    """A receipt that does not verify (code 1006); ``failure`` names the check that failed."""

    def __init__(self, failure: str, message: str) -> None:
        super().__init__("receipt %s: %s" % (failure.replace("_", " "), message), details={"failure": failure})
        self.failure = failure


@dataclass(frozen=True)
class VerifiedReceipt:
    """What verification established."""

    receipt: Dict[str, Any]
    digest: str
    """SHA-256 hex of the signed bytes: the receipt's identity."""
    peer_id: str
    certified: bool
    """True when the certificate was checked against a CA."""
    certificate_serial: str
    certificate_fingerprint256: str
    checked_arguments: bool
    checked_result: bool


def _sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def arguments_digest(args: Any) -> str:
    """``arguments_digest``: the call's arguments as given, a named object or a positional array;
    ``None`` (absent) is ``{}``. Raises CanonicalJsonError for anything else."""
    value = {} if args is None else args
    if not isinstance(value, (dict, list, tuple)):
        raise CanonicalJsonError("arguments must be an object of named arguments or an array")
    return json_digest(value)


def result_digest(result: Any) -> str:
    """``result_digest``: the digest of the result (a function returning nothing has the result null)."""
    return json_digest(result)


def lockfile_digest(lockfile: Any) -> str:
    """``lockfile_digest``: the digest of the version's lockfile; a version without one has ``None``."""
    return json_digest(lockfile)


def _payload_of(receipt: Mapping[str, Any]) -> Dict[str, Any]:
    return {k: receipt[k] for k in _PAYLOAD_MEMBERS}


def receipt_signing_bytes(receipt: Mapping[str, Any]) -> bytes:
    """The exact bytes the signature covers: the prefix, then the JCS of the payload members."""
    return RECEIPT_SIGNING_PREFIX + canonical_json(_payload_of(receipt)).encode("utf-8")


def receipt_digest(receipt: Mapping[str, Any]) -> str:
    """SHA-256 hex of the signed bytes (the identity the ``/ws`` event carries)."""
    return _sha256_hex(receipt_signing_bytes(receipt))


def _base58_decode(text: str) -> bytes:
    n = 0
    for c in text:
        i = _BASE58.find(c)
        if i < 0:
            raise ValueError("%r is not a base58btc character" % c)
        n = n * 58 + i
    zeros = len(text) - len(text.lstrip("1"))
    body = n.to_bytes((n.bit_length() + 7) // 8, "big") if n else b""
    return b"\x00" * zeros + body


def _base58_encode(data: bytes) -> str:
    n = int.from_bytes(data, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = _BASE58[r] + out
    return "1" * (len(data) - len(data.lstrip(b"\x00"))) + out


def ed25519_key_of_peer_id(peer_id: str) -> bytes:
    """The raw 32-byte Ed25519 key a PeerId embeds: base58btc of the identity multihash
    ``00 24`` of the libp2p PublicKey protobuf ``08 01 12 20 <key>``. ValueError otherwise."""
    if not isinstance(peer_id, str) or not 46 <= len(peer_id) <= 60:
        raise ValueError("not an Ed25519 PeerId")
    data = _base58_decode(peer_id)
    if len(data) != len(_ED25519_PEER_ID_PREFIX) + 32 or not data.startswith(_ED25519_PEER_ID_PREFIX):
        raise ValueError("not an Ed25519 PeerId (expected an identity multihash of an Ed25519 libp2p public key)")
    if _base58_encode(data) != peer_id:
        raise ValueError("not the canonical base58btc form of a PeerId")
    return data[len(_ED25519_PEER_ID_PREFIX):]


def _normalize_certificate_id(value: str) -> str:
    return re.sub(r"[:\s]", "", value).lower().lstrip("0")


def _crypto():
    try:
        from cryptography import x509
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise ImportError("receipt verification needs the 'cryptography' package: pip install 'svc-node-client[verify]' (from a checkout: pip install './clients/python[verify]')") from e
    return x509, InvalidSignature, hashes, Ed25519PublicKey


def _refuse_constant(name: str) -> Any:
    raise ValueError("%s is not JSON" % name)


def _malformed(message: str) -> ReceiptError:
    return ReceiptError("malformed", message)


def _is_integer(value: Any) -> bool:
    """A JSON number whose value is an integer (``5000`` and ``5000.0`` are the same number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, int) or value.is_integer()


def _is_positive_int(value: Any) -> bool:
    return _is_integer(value) and 0 < value <= _MAX_SAFE_INTEGER


def _show(value: Any) -> str:
    try:
        return json.dumps(value)[:80]
    except (TypeError, ValueError):
        return repr(value)[:80]


def _valid_timestamp(value: Any) -> bool:
    if not isinstance(value, str) or not _TIMESTAMP.fullmatch(value):
        return False
    try:
        _dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ")
    except ValueError:
        return False
    return True


def _check_payload(r: Mapping[str, Any]) -> bytes:
    """Step 1 for the payload members; returns the raw Ed25519 key of ``peer_id``."""
    version = r["receipt_version"]
    if not _is_integer(version) or version != RECEIPT_VERSION:
        raise _malformed("receipt_version %s is not 1" % _show(version))

    def expect(ok: bool, member: str, what: str) -> None:
        if not ok:
            raise _malformed("%s must be %s, not %s" % (member, what, _show(r[member])))

    def is_str(member: str, pattern: "re.Pattern[str]") -> bool:
        return isinstance(r[member], str) and pattern.fullmatch(r[member]) is not None

    expect(is_str("execution_id", _EXECUTION_ID), "execution_id", "an execution id (ex_ and 26 Crockford base32 characters)")
    expect(is_str("rufid", FULL_RUFID_RE), "rufid", "a full RUFID")
    for k in ("content_digest", "lockfile_digest", "arguments_digest"):
        expect(is_str(k, _HEX_DIGEST), k, "a lowercase SHA-256 hex digest")
    expect(isinstance(r["status"], str) and r["status"] in _STATUSES, "status", "success, error or timeout")
    expect(r["result_digest"] is None or is_str("result_digest", _HEX_DIGEST), "result_digest", "null or a lowercase SHA-256 hex digest")
    expect(r["error_code"] is None or _is_positive_int(r["error_code"]), "error_code", "null or a positive integer")
    limits = r["limits"]
    if not isinstance(limits, dict):
        raise _malformed("limits must be an object")
    if set(limits.keys()) != set(_LIMIT_MEMBERS):
        raise _malformed("limits must have exactly %s" % ", ".join(_LIMIT_MEMBERS))
    for k in _LIMIT_MEMBERS:
        if not _is_positive_int(limits[k]):
            raise _malformed("limits.%s must be a positive integer" % k)
    for k in ("started_at", "finished_at"):
        expect(_valid_timestamp(r[k]), k, "a UTC time YYYY-MM-DDTHH:MM:SS.sssZ")
    try:
        return ed25519_key_of_peer_id(r["peer_id"])
    except ValueError as e:
        raise _malformed("peer_id %s: %s" % (_show(r["peer_id"]), e)) from None


def _consistency_fault(r: Mapping[str, Any]) -> Optional[str]:
    digest_hash = base62(bytes.fromhex(r["content_digest"]))[:12]
    if digest_hash != r["rufid"].split(":")[1]:
        return "content_digest %s is not the content of %s" % (r["content_digest"], r["rufid"])
    status = r["status"]
    if status == "success" and (r["result_digest"] is None or r["error_code"] is not None):
        return "a success has a result_digest and no error_code"
    if status != "success" and (r["result_digest"] is not None or r["error_code"] is None):
        return "a%s %s has an error_code and no result_digest" % ("n" if status == "error" else "", status)
    if status == "timeout" and r["error_code"] != 1004:
        return "a timeout has error_code 1004"
    if r["finished_at"] < r["started_at"]:
        return "finished_at is before started_at"
    return None


def _utc(value: Union[None, str, _dt.datetime]) -> _dt.datetime:
    if value is None:
        return _dt.datetime.now(_dt.timezone.utc)
    if isinstance(value, str):
        value = _dt.datetime.strptime(value.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z" if "." in value else "%Y-%m-%dT%H:%M:%S%z")
    if value.tzinfo is None:
        raise ValueError("now must be timezone-aware (UTC)")
    return value.astimezone(_dt.timezone.utc)


def _validity(cert: Any) -> Tuple[_dt.datetime, _dt.datetime]:
    before = getattr(cert, "not_valid_before_utc", None)
    after = getattr(cert, "not_valid_after_utc", None)
    if before is None or after is None:  # cryptography < 42
        before = cert.not_valid_before.replace(tzinfo=_dt.timezone.utc)
        after = cert.not_valid_after.replace(tzinfo=_dt.timezone.utc)
    return before, after


def _certificate_fault(cert: Any, ca: Any, peer_id: str, now: _dt.datetime, revoked: FrozenSet[str]) -> Optional[Tuple[str, str]]:
    """The first rule the certificate breaks, in the order of docs/receipts.md §5 step 4."""
    x509, InvalidSignature, hashes, _ = _crypto()
    if ca is not None:
        try:
            cert.verify_directly_issued_by(ca)
        except (ValueError, TypeError, InvalidSignature):
            return "foreign_ca", "certificate of %s is not issued by the federation CA %s" % (cert.subject.rfc4514_string(), ca.subject.rfc4514_string())
    try:
        is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        is_ca = False
    if is_ca:
        return "not_certified", "the certificate is a CA certificate, not a node certificate"
    try:
        uris = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.UniformResourceIdentifier)
    except x509.ExtensionNotFound:
        uris = []
    bound = [u[len("libp2p:"):] for u in uris if u.startswith("libp2p:")]
    if not bound:
        return "not_certified", "the certificate binds no PeerId (no URI:libp2p: subject alternative name)"
    if peer_id not in bound:
        return "peer_id_mismatch", "the certificate binds %s, not %s" % (", ".join(bound), peer_id)
    before, after = _validity(cert)
    if now < before:
        return "not_yet_valid", "the certificate is valid from %s" % before.isoformat()
    if now > after:
        return "expired", "the certificate expired at %s" % after.isoformat()
    serial = _normalize_certificate_id(format(cert.serial_number, "x"))
    fingerprint = _normalize_certificate_id(cert.fingerprint(hashes.SHA256()).hex())
    if serial in revoked or fingerprint in revoked:
        return "revoked", "certificate %X is revoked" % cert.serial_number
    return None


def _compare_digest(failure: str, what: str, digest_of: Any, value: Any, signed: str) -> None:
    """Steps 5 and 6: a value the verifier holds against the digest the receipt signs."""
    try:
        digest = digest_of(value)
    except CanonicalJsonError as e:
        raise ReceiptError(failure, "the %s ha%s no canonical JSON form: %s" % (what, "ve" if what == "arguments" else "s", e)) from None
    if digest != signed:
        raise ReceiptError(failure, "the %s digest is %s, the receipt says %s" % (what, digest, signed))


def verify_receipt(
    receipt: Union[Mapping[str, Any], str, bytes],
    *,
    ca_cert_pem: Optional[Union[str, bytes]] = None,
    revoked: Optional[Iterable[str]] = None,
    args: Any = _UNSET,
    result: Any = _UNSET,
    now: Union[None, str, _dt.datetime] = None,
) -> VerifiedReceipt:
    """Verify a receipt (a dict, or its JSON text) as docs/receipts.md §5 says.

    ``ca_cert_pem``: the federation CA (absent: the certificate is not checked against a CA);
    ``revoked``: revoked serial numbers or SHA-256 fingerprints; ``args`` / ``result``: the call's
    arguments and the result to compare with the receipt's digests (not given: not checked;
    ``None`` is a value); ``now``: the verification time (default: now). Returns a
    :class:`VerifiedReceipt`, or raises :class:`ReceiptError` naming the first failed check.
    An unreadable CA certificate raises :class:`svc.ValidationError` (it is the caller's input).
    """
    x509, InvalidSignature, _, Ed25519PublicKey = _crypto()
    ca = None
    if ca_cert_pem is not None:
        try:
            ca = x509.load_pem_x509_certificate(ca_cert_pem.encode("ascii") if isinstance(ca_cert_pem, str) else ca_cert_pem)
        except (ValueError, UnicodeEncodeError) as e:
            raise ValidationError("the CA certificate is not an X.509 certificate: %s" % e) from None
    when = _utc(now)
    revoked_ids = frozenset(_normalize_certificate_id(r) for r in (revoked or ()))

    # 1. shape
    if isinstance(receipt, (str, bytes)):
        try:
            receipt = json.loads(receipt, parse_constant=_refuse_constant)
        except ValueError as e:
            raise _malformed("not JSON: %s" % e) from None
    if not isinstance(receipt, Mapping):
        raise _malformed("a receipt is a JSON object")
    unknown = sorted(str(k) for k in receipt.keys() if k not in _RECEIPT_MEMBERS)
    if unknown:
        raise _malformed("unknown member%s %s" % ("s" if len(unknown) > 1 else "", ", ".join(unknown)))
    for k in sorted(_RECEIPT_MEMBERS):
        if k not in receipt:
            raise _malformed("member %s is missing" % k)
    raw_key = _check_payload(receipt)
    text = receipt["signature"]
    if not isinstance(text, str) or not _SIGNATURE.fullmatch(text):
        raise _malformed("signature must be a 64-byte signature in unpadded base64url")
    signature = base64.urlsafe_b64decode(text + "==")
    if len(signature) != 64 or base64.urlsafe_b64encode(signature).decode("ascii").rstrip("=") != text:
        raise _malformed("signature is not the canonical base64url of 64 bytes")
    pem = receipt["certificate"]
    if not isinstance(pem, str) or not _PEM_CERTIFICATE.fullmatch(pem):
        raise _malformed("certificate must be one PEM certificate")
    try:
        cert = x509.load_pem_x509_certificate(pem.encode("ascii"))
    except ValueError as e:
        raise _malformed("certificate is not an X.509 certificate: %s" % e) from None

    # 2. signature
    signed = receipt_signing_bytes(receipt)
    try:
        Ed25519PublicKey.from_public_bytes(raw_key).verify(signature, signed)
    except InvalidSignature:
        raise ReceiptError("bad_signature", "the signature does not verify under the key of PeerId %s" % receipt["peer_id"]) from None

    # 3. consistency
    fault = _consistency_fault(receipt)
    if fault is not None:
        raise _malformed(fault)

    # 4. certificate
    cert_fault = _certificate_fault(cert, ca, receipt["peer_id"], when, revoked_ids)
    if cert_fault is not None:
        raise ReceiptError(*cert_fault)

    # 5. arguments and result
    if args is not _UNSET:
        _compare_digest("arguments_mismatch", "arguments", arguments_digest, args, receipt["arguments_digest"])
    if result is not _UNSET:
        if receipt["result_digest"] is None:
            raise ReceiptError("result_mismatch", "the receipt records error %s (%s), not a result" % (receipt["error_code"], receipt["status"]))
        _compare_digest("result_mismatch", "result", result_digest, result, receipt["result_digest"])

    return VerifiedReceipt(
        receipt=dict(receipt),
        digest=_sha256_hex(signed),
        peer_id=receipt["peer_id"],
        certified=ca is not None,
        certificate_serial=format(cert.serial_number, "X"),
        certificate_fingerprint256=cert.fingerprint(_crypto()[2].SHA256()).hex(),
        checked_arguments=args is not _UNSET,
        checked_result=result is not _UNSET,
    )
