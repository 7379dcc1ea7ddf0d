#!/usr/bin/env python3
"""Runs a wasm32-wasip1 program under wasmtime (the `wasmtime` package from PyPI, which ships
the runtime): `python3 .ci/wasi-run.py program.wasm [args...]`. Exits with the program's exit
code. The program gets its arguments and stdout/stderr, nothing else (no files, no env)."""
import sys

import wasmtime


def main() -> int:
    path = sys.argv[1]
    engine = wasmtime.Engine()
    store = wasmtime.Store(engine)
    wasi = wasmtime.WasiConfig()
    wasi.argv = [path] + sys.argv[2:]
    wasi.inherit_stdout()
    wasi.inherit_stderr()
    store.set_wasi(wasi)
    linker = wasmtime.Linker(engine)
    linker.define_wasi()
    module = wasmtime.Module.from_file(engine, path)
    instance = linker.instantiate(store, module)
    try:
        instance.exports(store)["_start"](store)
    except wasmtime.ExitTrap as e:
        return e.code
    return 0


if __name__ == "__main__":
    sys.exit(main())
