"""PIL's output for crops that images_test.go asks for: reads a JSON list
of cases on stdin and writes each result's raw bytes to stdout, in order.

A case: {"file", "mode": "RGB" | "L" | "mask", "region": [x0, y0, x1, y1],
"out": [w, h], "resized": [w, h, left, top] or null, "flip": bool}.
Images are converted to the mode and resampled with BILINEAR, as
torchvision's transforms on PIL images do; masks keep their values (grey
or palette indices) and are resampled with NEAREST. With "resized" the
whole image is resized and then cropped (Resize then CenterCrop); without,
the region is cropped and then resized (RandomResizedCrop).
"""
import json
import sys

from PIL import Image

out = sys.stdout.buffer
for case in json.load(sys.stdin):
    im = Image.open(case["file"])
    if case["mode"] == "mask":
        if im.mode == "1":
            im = im.convert("L")
        resample = Image.NEAREST
    else:
        im = im.convert(case["mode"])
        resample = Image.BILINEAR
    w, h = case["out"]
    if case["resized"]:
        rw, rh, left, top = case["resized"]
        im = im.resize((rw, rh), resample).crop((left, top, left + w, top + h))
    else:
        im = im.crop(tuple(case["region"])).resize((w, h), resample)
    if case["flip"]:
        im = im.transpose(Image.FLIP_LEFT_RIGHT)
    out.write(im.tobytes())
