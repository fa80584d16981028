"""Build the optional native decoder; everything else is configured in pyproject.toml.

The extension is optional: where no C compiler is available the install still
succeeds and `protocol.codec` decodes in pure Python (slower, same results).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("protocol._fastwire", ["protocol/_fastwire.c"], optional=True)])
