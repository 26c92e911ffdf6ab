"""The workbook's Python harness: ctypes bindings (ffi), one check module per lab
(check_<lab>.py) and selfcheck, which runs them all."""
