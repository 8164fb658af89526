"""A table file's bytes as text: the encoding named, a BOM dropped, undecodable bytes an error naming the line
and the encoding the file likely has."""

from __future__ import annotations

import codecs


from ltrfeat.core.errors import TextTableError
from ltrfeat.core.fileio import open_input


def text_codec(encoding: str, *, path=None) -> str:
    """The normalised name of the text encoding ``encoding``; an unknown name or a codec that is not a text
    encoding (rot13, base64: transforms) is a :class:`TextTableError`."""
    try:
        info = codecs.lookup(encoding)
    except LookupError:
        info = None
    if info is None or not getattr(info, "_is_text_encoding", True):
        what = "unknown encoding" if info is None else "not a text encoding:"
        raise TextTableError(
            f"{what} {encoding!r}", path=path, fix="use a Python codec name such as utf-8, cp1252 or latin-1"
        )
    return info.name


def _read_bytes(path, encoding: str) -> tuple[bytes, str]:
    """The file's bytes (a UTF-8 BOM removed) and the normalised codec name."""
    codec = text_codec(encoding, path=path)
    with open_input(path) as fh:
        raw = fh.read()
    if codec == "utf-8" and raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    return raw, codec


def _decode(raw: bytes, codec: str, path, encoding: str) -> str:
    """``raw`` as text; undecodable bytes are an error naming the line, the byte offset and a likely encoding."""
    try:
        text = raw.decode(codec)
    except UnicodeDecodeError as exc:
        bom = len(codecs.BOM_UTF8) if codec == "utf-8" and _starts_with_bom(path) else 0
        offset = bom + exc.start
        line = raw.count(b"\n", 0, exc.start) + 1
        bad = raw[exc.start : exc.end]
        guess = _guess_encoding(raw, failed=codec)
        raise TextTableError(
            f"cannot decode byte {bad.hex(' ')} at byte offset {offset} as {encoding}",
            path=path,
            line=line,
            fix=f"the file decodes as {guess}: pass encoding={guess!r} (CLI: --encoding {guess})",
        ) from None
    if b"\n" in raw and "\n" not in text:  # UTF-8 read as UTF-16: no error, but every byte pair one character
        guess, breaks = _guess_encoding(raw, failed=codec), raw.count(b"\n")
        raise TextTableError(
            f"read as {encoding} the file has no line breaks, though its bytes hold {breaks}: it is not {encoding}",
            path=path,
            fix=f"the file decodes as {guess}: pass encoding={guess!r} (CLI: --encoding {guess})",
        )
    return text[1:] if text.startswith("\ufeff") else text


def _starts_with_bom(path) -> bool:
    with open_input(path) as fh:
        return fh.read(len(codecs.BOM_UTF8)) == codecs.BOM_UTF8


def _guess_encoding(raw: bytes, *, failed: str) -> str:
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    for candidate in ("utf-8", "cp1252"):
        if codecs.lookup(candidate).name != failed:
            try:
                raw.decode(candidate)
                return candidate
            except UnicodeDecodeError:
                pass
    return "latin-1"  # decodes any byte sequence
