# SPDX-License-Identifier: GPL-2.0
# Sphinx configuration: `make htmldocs`. The kernel-doc extension and script
# come from Debian's linux-source-6.1, unpacked by the Makefile.
import os
import sys

top = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
ksrc = os.environ.get('MEMPREPOP_KSRC',
                      os.path.join(top, 'build', 'linux-source'))
sys.path.insert(0, os.path.join(ksrc, 'Documentation', 'sphinx'))

project = 'memprepop'
copyright = '2026, memprepop developers'
# The version is written once, in VERSION
with open(os.path.join(top, 'VERSION')) as f:
    version = release = f.read().strip()

extensions = ['kerneldoc']
kerneldoc_bin = os.path.join(ksrc, 'scripts', 'kernel-doc')
kerneldoc_srctree = top

primary_domain = 'c'
highlight_language = 'none'
exclude_patterns = ['man']
# |version| in parsed-literal blocks
rst_prolog = '.. |version| replace:: %s\n' % version
html_theme = 'alabaster'
