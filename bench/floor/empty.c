/*
 * The empty preloaded library of P2 (bench/README.md): what loading any
 * preloaded object costs a program, with nothing of its own to do. One
 * symbol, because ISO C wants a declaration; no code, no libc symbol.
 */
const char toolrun_bench_empty[] = "";
