#!/usr/bin/env python3
"""Writes the committed test fixtures in the exact structure of the public distributions, with
Python's own pickle module and the stand-ins of fakepy.py (no numpy or torch needed):

  pyfile/testdata/     numpy and torch objects (pyfile's tests)
  data/testdata/pyg/   a data folder with the four public distributions in miniature, and
                       LRGB's Peptides-func and Peptides-struct (peptides.py)
  data/testdata/lrgb-bad/  damaged peptide files for the readers' error tests

Run from the repository root: python3 scripts/pyfixtures/make.py
The output is deterministic: running it again gives byte-identical files."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import datasets  # noqa: E402
import peptides  # noqa: E402
import pyfile  # noqa: E402

pyfile.make("pyfile/testdata")
datasets.make("data/testdata/pyg")
peptides.make("data/testdata/pyg", "data/testdata/lrgb-bad")
