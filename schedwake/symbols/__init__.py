"""Addresses to names: kernel functions through kallsyms (:mod:`.kernel`), user-space
functions through the memory maps a perf.data records and the ELF symbol tables of the
mapped files (:mod:`.elf`, :mod:`.resolve`).

A perf.data file carries addresses only (its callchains, the ``ip`` of a sample, the
function pointer of ``workqueue_execute_start``); naming them is a separate step with
its own caveats (a kallsyms of another kernel names the wrong functions, a binary
rebuilt since the recording names the wrong ones), so each source is used only when it
can be shown to belong to the recording, and what stays unnamed is ``[unknown]`` and
counted.
"""
