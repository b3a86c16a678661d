#!/usr/bin/env python3
"""pngcheck.py — look at a screenshot without an image library (python3's
standard library only: zlib and struct), for tests/integration/report_html.sh.

  pngcheck.py regions FILE.png
      prints, one "key value" per line, for the page in the screenshot:
        width, height          pixels
        content_bottom         the last row that is not blank (white)
        top_ink                share of non-white pixels in the band just below
                               the page title (rows 5-30 % of the content), where
                               the first figures are
        probe_box              rows of the last box with a long #ccc border
                               (the coloured probe text; "0 0" if none)
        orange_probe, blue_probe
                               pixels of the report's α colours (white to
                               #e6550d) and depth colours (white to #2171b5)
                               inside that box — not the legend above it
  pngcheck.py title FILE.png
      for a gnuplot figure (tests/integration/figures.sh): the ink of its top band
      (rows 0-49, where the title's first line sits, above any key), as
        width, height          pixels
        title_ink              non-white pixels in the band
        title_left, title_right
                               the first and last column with ink (-1 if none); a title
                               wider than the canvas runs off both edges (0 and width-1)
  pngcheck.py crop FILE.png X Y W H OUT.png     a region, for a person to look at
"""
import struct
import sys
import zlib


def read_png(path):
    """(width, height, rows) with rows a list of bytes objects, RGB."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG")
    pos, idat, w = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise SystemExit(f"{path}: only 8-bit RGB/RGBA, non-interlaced PNGs are read here")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + n
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        ft = raw[y * (stride + 1)]
        cur = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if ft == 1:
            for i in range(bpp, stride):
                cur[i] = (cur[i] + cur[i - bpp]) & 255
        elif ft == 2:
            for i in range(stride):
                cur[i] = (cur[i] + prev[i]) & 255
        elif ft == 3:
            for i in range(stride):
                cur[i] = (cur[i] + ((cur[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 255
        elif ft == 4:
            for i in range(stride):
                a = cur[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = cur
        rows.append(bytes(cur) if bpp == 3 else bytes(v for k, v in enumerate(cur) if k % 4 != 3))
    return w, h, rows


def on_scale(r, g, b, to):
    """Is (r, g, b) a point t in [0.25, 1] of the line white -> to?"""
    t = (255 - b) / (255 - to[2]) if to[2] < 255 else 0
    if t < 0.25 or t > 1.05:
        return False
    want = [255 + (c - 255) * t for c in to]
    return all(abs(x - y) <= 12 for x, y in zip((r, g, b), want))


def regions(path):
    w, h, rows = read_png(path)
    blank = lambda row: row.count(255) >= len(row) - 3
    bottom = max((y for y in range(h) if not blank(rows[y])), default=0)
    top0, top1 = int(bottom * 0.05), int(bottom * 0.30)
    ink = sum(sum(1 for x in range(w) if min(rows[y][3 * x:3 * x + 3]) < 235) for y in range(top0, top1))
    area = max(1, (top1 - top0) * w)
    # the probe box: the last two rows (apart) where #ccc runs over half the width
    long = [y for y in range(h) if rows[y].count(b"\xcc\xcc\xcc") > w // 2]
    y1 = long[-1] if long else 0
    y0 = max((y for y in long if y < y1 - 5), default=y1)
    orange = blue = 0
    for y in range(y0 + 1, y1):
        row = rows[y]
        for x in range(w):
            r, g, b = row[3 * x:3 * x + 3]
            if b >= 250:
                continue
            orange += on_scale(r, g, b, (0xe6, 0x55, 0x0d))
            blue += on_scale(r, g, b, (0x21, 0x71, 0xb5))
    print(f"width {w}\nheight {h}\ncontent_bottom {bottom}\ntop_ink {ink / area:.4f}")
    print(f"probe_box {y0} {y1}\norange_probe {orange}\nblue_probe {blue}")


def title(path):
    w, h, rows = read_png(path)
    ink, left, right = 0, -1, -1
    for y in range(min(h, 50)):
        row = rows[y]
        for x in range(w):
            if min(row[3 * x:3 * x + 3]) < 200:
                ink += 1
                left = x if left < 0 or x < left else left
                right = max(right, x)
    print(f"width {w}\nheight {h}\ntitle_ink {ink}\ntitle_left {left}\ntitle_right {right}")


def crop(path, x, y, cw, ch, out):
    w, h, rows = read_png(path)
    body = b"".join(b"\x00" + rows[yy][3 * x:3 * (x + cw)] for yy in range(y, min(h, y + ch)))
    n = min(h, y + ch) - y

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)

    with open(out, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", cw, n, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(body)) + chunk(b"IEND", b""))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "regions":
        regions(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "title":
        title(sys.argv[2])
    elif len(sys.argv) == 8 and sys.argv[1] == "crop":
        crop(sys.argv[2], *map(int, sys.argv[3:7]), sys.argv[7])
    else:
        raise SystemExit(__doc__)
