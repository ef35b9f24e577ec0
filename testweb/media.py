"""Tiny but real GIF, PNG, JPEG and PDF files with known dimensions.

Built from the format specifications (no imaging library), so a crawler's
image-size sniffing can be checked against :data:`DIMENSIONS`.
"""

from __future__ import annotations

import struct
import zlib

DIMENSIONS = {"gif": (37, 21), "png": (64, 48), "jpeg": (120, 80)}


def gif(width: int, height: int) -> bytes:
    """A one-colour GIF89a; LZW codes stay 3 bits by clearing every 2 pixels."""
    header = b"GIF89a" + struct.pack("<HHBBB", width, height, 0x80, 0, 0)
    palette = b"\x20\x60\xa0" + b"\xff\xff\xff"
    descriptor = b"," + struct.pack("<HHHHB", 0, 0, width, height, 0)
    clear, end, pixels = 4, 5, width * height
    codes: list[int] = []
    for start in range(0, pixels, 2):
        codes += [clear] + [0] * min(2, pixels - start)
    codes.append(end)
    bits = 0
    for position, code in enumerate(codes):
        bits |= code << (3 * position)
    data = bits.to_bytes((3 * len(codes) + 7) // 8, "little")
    blocks = b"".join(bytes([len(data[i:i + 255])]) + data[i:i + 255] for i in range(0, len(data), 255))
    return header + palette + descriptor + b"\x02" + blocks + b"\x00;"


def png(width: int, height: int) -> bytes:
    """An 8-bit greyscale PNG, all mid-grey."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = (b"\x00" + b"\x80" * width) * height
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def jpeg(width: int, height: int) -> bytes:
    """A baseline greyscale JPEG of flat blocks.

    One-code Huffman tables (DC category 0 and AC end-of-block, each the
    1-bit code ``0``) make every 8x8 block two zero bits.
    """
    def segment(marker: int, data: bytes) -> bytes:
        return struct.pack(">BBH", 0xFF, marker, len(data) + 2) + data

    app0 = b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    dqt = b"\x00" + b"\x01" * 64
    sof0 = struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00"
    one_code = b"\x01" + b"\x00" * 15 + b"\x00"
    dht = b"\x00" + one_code + b"\x10" + one_code
    sos = b"\x01\x01\x00\x00\x3f\x00"
    blocks = ((width + 7) // 8) * ((height + 7) // 8)
    bit_count = 2 * blocks
    padding = (-bit_count) % 8
    scan = ((1 << padding) - 1).to_bytes((bit_count + padding) // 8, "big")
    return (b"\xff\xd8" + segment(0xE0, app0) + segment(0xDB, dqt) + segment(0xC0, sof0)
            + segment(0xC4, dht) + segment(0xDA, sos) + scan + b"\xff\xd9")


def pdf() -> bytes:
    """A one-page PDF 1.4 with a correct cross-reference table."""
    stream = b"BT /F1 24 Tf 72 720 Td (Synthetic web paper) Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


MEDIA = {
    "gif": ("image/gif", gif(*DIMENSIONS["gif"])),
    "png": ("image/png", png(*DIMENSIONS["png"])),
    "jpeg": ("image/jpeg", jpeg(*DIMENSIONS["jpeg"])),
    "pdf": ("application/pdf", pdf()),
}
