"""JPEGs that pil_test.go compares with PIL, written by PIL: reads a JSON
list of jobs on stdin and saves each.

A job: {"src", "dst", "quality", "subsampling": "4:4:4" | "4:2:2" |
"4:2:0"}. The source image is converted to RGB and saved as dst at the
quality, its chroma subsampled so.
"""
import json
import sys

from PIL import Image

for job in json.load(sys.stdin):
    im = Image.open(job["src"]).convert("RGB")
    im.save(job["dst"], quality=job["quality"], subsampling=job["subsampling"])
