"""Writes the JPEGs of runtime/internal/jpeg's tests with PIL (Debian's
python3-pil 9.4, libjpeg-turbo): encodings that Go's encoder does not
write. Run from this directory: /usr/bin/python3 make_fixtures.py"""
import math

from PIL import Image

w, h = 97, 61
im = Image.new("RGB", (w, h))
im.putdata([(int(128 + 100 * math.sin(x / 7 + y / 11)), (x * 255) // w, (y * 255) // h)
            for y in range(h) for x in range(w)])
im.save("progressive420.jpg", quality=90, progressive=True, subsampling=2)
im.convert("L").save("progressive_grey.jpg", quality=90, progressive=True)
im.save("baseline444.jpg", quality=90, subsampling=0)
im.save("baseline422.jpg", quality=90, subsampling=1)
