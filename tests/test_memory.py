"""Opting in to keeping freed memory (glibc only)."""

import platform

from liftoff import dynamics


def test_retain_freed_memory_reports_whether_it_applied():
    assert dynamics.retain_freed_memory() is (platform.libc_ver()[0] == "glibc")
