/* SHA-256 as lowercase hex, with Nettle: the audit chain, the summary of
 * binary output, the front ends' file summaries and index names.
 *
 * Nettle rather than OpenSSL's libcrypto: a SHA-256 context is a plain
 * struct (no allocation, nothing to initialise, no config file read on
 * first use), and the library is a fraction of libcrypto's size in every
 * process of toolrund that maps it (bench/README.md, P5). */
#ifndef TOOLRUN_DIGEST_H
#define TOOLRUN_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include <nettle/sha2.h>

#define DIGEST_SHA256_SIZE SHA256_DIGEST_SIZE
/* 64 hex digits and a NUL. */
#define DIGEST_HEX_SIZE (2 * SHA256_DIGEST_SIZE + 1)

/* hex = the lowercase hex of d[0..n), NUL-terminated (2n+1 bytes). */
void digest_to_hex(const uint8_t *d, size_t n, char *hex);

/* The SHA-256 of len bytes. */
void digest_sha256(const void *data, size_t len, uint8_t out[DIGEST_SHA256_SIZE]);
void digest_sha256_hex(const void *data, size_t len, char hex[DIGEST_HEX_SIZE]);

/* Ends a context fed with sha256_update (and resets it for reuse). */
void digest_sha256_end_hex(struct sha256_ctx *ctx, char hex[DIGEST_HEX_SIZE]);

#endif
