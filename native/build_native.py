"""cffi (API mode) builder for uet.native._uet_native.

Used by setup.py (``cffi_modules=["native/build_native.py:ffibuilder"]``);
can also be run directly (``python native/build_native.py``) to build the
extension in place for development.
"""

from __future__ import annotations

import os
import sys

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = ["crc32c.c", "icrc.c", "reasm.c", "mmsg.c"]
# A later C module NAME.c declares what Python may call in NAME.cdef beside it (its own header is
# NAME.h): each is compiled and declared here without this file changing.
MODULES = sorted(os.path.splitext(f)[0] for f in os.listdir(HERE) if f.endswith(".cdef"))
SOURCES += [m + ".c" for m in MODULES]

# Data pointers are declared "char *" here (void * in C): cffi then passes a
# bytes object straight through, without from_buffer and without a copy.
CDEF = """
uint32_t uet_crc32c(uint32_t crc, const char *buf, size_t len);
uint32_t uet_crc32c_sw(uint32_t crc, const char *buf, size_t len);
uint32_t uet_crc32c_hw(uint32_t crc, const char *buf, size_t len);
int uet_crc32c_has_hw(void);

uint32_t uet_crc32(uint32_t crc, const char *buf, size_t len);
uint32_t uet_crc32_sw(uint32_t crc, const char *buf, size_t len);
int64_t uet_roce_icrc(const char *pkt, size_t len);

typedef struct uet_reasm uet_reasm;
uet_reasm *uet_reasm_new(char *buf, int64_t length);
void uet_reasm_free(uet_reasm *r);
int64_t uet_reasm_place(uet_reasm *r, int64_t offset, const char *data, int64_t len);
int uet_reasm_has(const uet_reasm *r, int64_t offset, int64_t len);
int64_t uet_reasm_received(const uet_reasm *r);
int64_t uet_reasm_length(const uet_reasm *r);
int64_t uet_reasm_missing(const uet_reasm *r, int64_t *out, int64_t max_holes);

#define UET_PSN_NEW 0
#define UET_PSN_DUPLICATE 1
#define UET_PSN_OUT_OF_WINDOW 2
#define UET_PSN_MAX_WINDOW ...
typedef struct uet_psnwin uet_psnwin;
uet_psnwin *uet_psnwin_new(uint32_t start_psn, uint32_t size);
void uet_psnwin_free(uet_psnwin *w);
int uet_psnwin_set(uet_psnwin *w, uint32_t psn);
int uet_psnwin_test(const uet_psnwin *w, uint32_t psn);
uint64_t uet_psnwin_sack(const uet_psnwin *w, uint32_t base_psn);
uint32_t uet_psnwin_cack(const uet_psnwin *w);
uint32_t uet_psnwin_highest(const uet_psnwin *w);
int32_t uet_psn_diff(uint32_t a, uint32_t b);
int uet_psn_lt(uint32_t a, uint32_t b);

#define UET_MMSG_MAX ...
typedef struct {
    int32_t len;
    uint32_t flags;
    uint8_t src[4];
    uint8_t dst[4];
    uint16_t sport;
    uint8_t tos;
    uint8_t has_dst;
} uet_rx4;
int uet_cmsg_parse4(const char *control, size_t controllen, uint8_t *tos, uint8_t *dst);
int uet_recvmmsg4(int fd, char *buf, int32_t slot, int32_t n, uet_rx4 *out);
int uet_sendmmsg4(int fd, const char *data, const uint32_t *off, const uint32_t *len,
                  const char *dst, const uint16_t *port, const char *tos, int32_t tos_default,
                  const char *src, int32_t n);
int uet_mmsg_available(void);
"""


def _extra_compile_args() -> list[str]:
    if sys.platform == "win32":
        return ["/O2"]
    return ["-O3", "-std=c11", "-fno-strict-aliasing"]


# setuptools insists on paths relative to the directory of setup.py; a direct
# run (``python native/build_native.py``) uses absolute ones because
# ffibuilder.compile() changes into its temporary directory.
_DIR = HERE if __name__ == "__main__" else "native"


def _module_cdefs() -> str:
    parts = []
    for m in MODULES:
        with open(os.path.join(HERE, m + ".cdef"), encoding="utf-8") as f:
            parts.append(f.read())
    return "\n".join(parts)


ffibuilder = FFI()
ffibuilder.cdef(CDEF + _module_cdefs())
# Every function here is short and never blocks, so keep the GIL across the
# call: releasing and re-taking it costs ~50 ns per call, a sizeable part of
# the per-packet budget (cffi wraps each call in these two macros).
PREAMBLE = """
#include "uet_native.h"
""" + "".join('#include "%s.h"\n' % m for m in MODULES) + """
#undef Py_BEGIN_ALLOW_THREADS
#undef Py_END_ALLOW_THREADS
#define Py_BEGIN_ALLOW_THREADS {
#define Py_END_ALLOW_THREADS }
"""

ffibuilder.set_source(
    "uet.native._uet_native",
    PREAMBLE,
    sources=[os.path.join(_DIR, s) for s in SOURCES],
    include_dirs=[_DIR],
    depends=[os.path.join(_DIR, "uet_native.h")] + [os.path.join(_DIR, m + ".h") for m in MODULES],
    extra_compile_args=_extra_compile_args(),
    libraries=[] if sys.platform == "win32" else ["m"],  # fabric.c: exp (NET-G1)
)

if __name__ == "__main__":
    # In-place build: puts uet/native/_uet_native*.so next to the package.
    root = os.path.dirname(HERE)
    os.chdir(root)
    ffibuilder.compile(tmpdir=os.path.join(root, "build", "cffi"), verbose=True)
    import glob
    import shutil

    dest = os.path.join(root, "uet", "native")
    built = [so for so in glob.glob(os.path.join(root, "build", "cffi", "uet", "native", "_uet_native*"))
             if so.endswith((".so", ".pyd"))]
    if built:
        for old in glob.glob(os.path.join(dest, "_uet_native*")):
            if old.endswith((".so", ".pyd")):
                os.remove(old)  # a stale copy with another tag would shadow it
    for so in built:
        shutil.copy2(so, dest)
        print("installed", os.path.join(dest, os.path.basename(so)))
