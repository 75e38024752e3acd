"""The encoding of a JUnit XML file in the pure backend: byte order mark, XML declaration,
and the transcoding to UTF-8 before expat sees the bytes (docs/ENGINE.md, *JUnit XML*,
"Encoding").

Twin of ``rust/core/src/junit/decode.rs``: ``_read_prologue`` and ``_parse_xml_decl`` are
``read_prologue`` and ``parse_xml_decl``; ``_decoder``'s modes are the ``AsciiOnly``,
``Latin1ToUtf8`` and ``Utf16ToUtf8`` adapters.
"""

from __future__ import annotations

from collections.abc import Callable

from pytest_mcp_server.engine.models import ReportError

# Bytes at the start of the file in which the XML declaration must end.
DECL_WINDOW = 4096

_ENCODINGS = {
    "utf-8": "utf8",
    "utf8": "utf8",
    "us-ascii": "ascii",
    "ascii": "ascii",
    "iso-8859-1": "latin1",
    "iso8859-1": "latin1",
    "iso_8859-1": "latin1",
    "latin-1": "latin1",
    "latin1": "latin1",
    "utf-16": "utf16",
    "utf16": "utf16",
}


def _read_prologue(path: str, head: bytes, whole: bool) -> tuple[str, int]:
    """(mode, byte order mark length) from the first bytes; see ``read_prologue`` in
    ``junit/decode.rs``. Modes: ``utf8``, ``ascii``, ``latin1``, ``utf-16-le``,
    ``utf-16-be``."""
    if head.startswith(b"\xef\xbb\xbf"):
        bom_mode, bom_len = "utf8", 3
    elif head.startswith(b"\xff\xfe"):
        bom_mode, bom_len = "utf-16-le", 2
    elif head.startswith(b"\xfe\xff"):
        bom_mode, bom_len = "utf-16-be", 2
    else:
        bom_mode, bom_len = None, 0
    if bom_mode in ("utf-16-le", "utf-16-be"):
        text = _Utf16(bom_mode).valid_prefix(head[bom_len:])
    else:
        text = head[bom_len:]
    try:
        declared = _parse_xml_decl(text, whole)
    except _DeclError as exc:
        raise ReportError("malformed", path, exc.message, f"byte {bom_len + exc.offset}") from None
    family = None
    declared_name = ""  # read only when family is set, that is when there is a declaration
    if declared is not None:
        declared_name = declared.decode("ascii")
        family = _ENCODINGS.get(declared_name.lower())
        if family is None:
            raise ReportError(
                "unsupported_encoding",
                path,
                f"the XML declaration names the encoding {declared_name!r}; only UTF-8, US-ASCII, "
                "ISO-8859-1 and UTF-16 are supported: convert the file to UTF-8 (e.g. with iconv)",
                "byte 0",
            )

    def contradiction(bom: str) -> ReportError:
        return ReportError(
            "malformed",
            path,
            f"the byte order mark says {bom} but the XML declaration says {declared_name!r}; "
            "fix the declaration or re-encode the file",
            f"byte {bom_len}",
        )

    if bom_mode in ("utf-16-le", "utf-16-be"):
        if family not in (None, "utf16"):
            raise contradiction("UTF-16")
        return bom_mode, bom_len
    if family == "utf16":
        raise ReportError(
            "malformed",
            path,
            "the XML declaration says UTF-16 but the file has no UTF-16 byte order mark (it reads as ASCII); "
            "fix the declaration or re-encode the file",
            f"byte {bom_len}",
        )
    if bom_mode == "utf8" and family == "latin1":
        raise contradiction("UTF-8")
    return family if family in ("ascii", "latin1") else "utf8", bom_len


class _DeclError(Exception):
    def __init__(self, message: str, offset: int) -> None:
        self.message = message
        self.offset = offset


_BAD_DECL = (
    'the XML declaration is not well-formed (expected version="1.0", then optionally encoding="..." '
    'and standalone="yes|no"); fix the first line of the file'
)


def _parse_xml_decl(text: bytes, whole: bool) -> bytes | None:
    """The declared encoding name of the XML declaration at the start of ``text`` (None
    without a declaration or without ``encoding``), checked as expat's
    ``XmlParseXmlDecl`` checks it. Raises ``_DeclError``."""
    if not (text.startswith(b"<?xml") and len(text) > 5 and text[5:6] in (b" ", b"\t", b"\n", b"\r", b"?")):
        return None
    close = text.find(b"?>", 5)
    if close < 0:
        if whole:
            raise _DeclError(
                "the XML declaration '<?xml ...' is not closed by '?>'; the file is truncated or not XML", 0
            )
        raise _DeclError("the XML declaration '<?xml ...' is not closed within the first 4 KiB; shorten it", 0)
    decl = text[:close]
    pos = 5

    def at(i: int) -> int:
        # expat's toAscii: -1 past the end or for a non-ASCII byte.
        return decl[i] if i < len(decl) and decl[i] < 0x80 else -1

    def is_space(c: int) -> bool:
        return c in (0x20, 0x09, 0x0A, 0x0D)

    def next_attr() -> tuple[bytes, bytes] | None:
        nonlocal pos
        if pos == len(decl):
            return None
        if not is_space(at(pos)):
            raise _DeclError(_BAD_DECL, pos)
        while is_space(at(pos)):
            pos += 1
        if pos == len(decl):
            return None
        name_start = pos
        while True:
            c = at(pos)
            if c == -1:
                raise _DeclError(_BAD_DECL, pos)
            if c == 0x3D:  # '='
                name_end = pos
                break
            if is_space(c):
                name_end = pos
                while is_space(at(pos)):
                    pos += 1
                if at(pos) != 0x3D:
                    raise _DeclError(_BAD_DECL, pos)
                break
            pos += 1
        if name_end == name_start:
            raise _DeclError(_BAD_DECL, pos)
        pos += 1
        while is_space(at(pos)):
            pos += 1
        quote = at(pos)
        if quote not in (0x22, 0x27):
            raise _DeclError(_BAD_DECL, pos)
        pos += 1
        value_start = pos
        while True:
            c = at(pos)
            if c == quote:
                break
            if c == -1 or not (chr(c).isascii() and (chr(c).isalnum() or c in b"._-")):
                raise _DeclError(_BAD_DECL, pos)
            pos += 1
        value = decl[value_start:pos]
        pos += 1
        return decl[name_start:name_end], value

    attr = next_attr()
    if attr is None or attr[0] != b"version":
        raise _DeclError(_BAD_DECL, pos)
    attr = next_attr()
    encoding = None
    if attr is not None and attr[0] == b"encoding":
        if not (attr[1][:1].isalpha() and attr[1][:1].isascii()):
            raise _DeclError(_BAD_DECL, pos)
        encoding = attr[1]
        attr = next_attr()
    if attr is not None:
        if attr[0] != b"standalone" or attr[1] not in (b"yes", b"no"):
            raise _DeclError(_BAD_DECL, pos)
        while is_space(at(pos)):
            pos += 1
        if pos != len(decl):
            raise _DeclError(_BAD_DECL, pos)
    return encoding


class _DecodeError(Exception):
    """Bytes invalid for the encoding; ``valid`` is the UTF-8 of what came before."""

    def __init__(self, message: str, valid: bytes) -> None:
        self.message = message
        self.valid = valid


class _Utf16:
    """UTF-16 (byte order given, mark skipped) to UTF-8, chunk by chunk."""

    def __init__(self, codec: str) -> None:
        self.codec = codec
        self.carry = b""
        self.big = codec == "utf-16-be"

    def _high_surrogate_at(self, data: bytes, i: int) -> bool:
        unit = data[i] if self.big else data[i + 1]
        return 0xD8 <= unit <= 0xDB

    def decode(self, chunk: bytes, final: bool) -> bytes:
        data = self.carry + chunk
        cut = len(data) & ~1
        if not final and cut >= 2 and self._high_surrogate_at(data, cut - 2):
            cut -= 2  # keep a high surrogate with its low half
        self.carry = data[cut:]
        try:
            out = data[:cut].decode(self.codec).encode("utf-8")
        except UnicodeDecodeError as exc:
            valid = data[: exc.start].decode(self.codec).encode("utf-8")
            raise _DecodeError(
                f"invalid UTF-16 (unpaired surrogate) at code unit {exc.start // 2}; "
                "the file is corrupted or not UTF-16",
                valid,
            ) from None
        if final and self.carry:
            raise _DecodeError("the UTF-16 text ends in the middle of a character; the file is truncated", out)
        return out

    def valid_prefix(self, data: bytes) -> bytes:
        try:
            return self.decode(data, final=False)
        except _DecodeError as exc:
            return exc.valid


def _decoder(mode: str) -> Callable[[bytes, bool], bytes]:
    """A function (raw chunk, final) -> UTF-8 bytes for ``mode``; raises ``_DecodeError``."""
    if mode == "utf8":
        return lambda chunk, final: chunk
    if mode == "latin1":
        return lambda chunk, final: chunk.decode("latin-1").encode("utf-8")
    if mode == "ascii":

        def ascii_only(chunk: bytes, final: bool) -> bytes:
            if chunk.isascii():
                return chunk
            i = next(i for i, b in enumerate(chunk) if b >= 0x80)
            raise _DecodeError(
                f"byte 0x{chunk[i]:02X} is not US-ASCII, the encoding the XML declaration names; "
                'declare encoding="UTF-8" (or the real encoding)',
                chunk[:i],
            )

        return ascii_only
    return _Utf16(mode).decode
