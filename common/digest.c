#include "digest.h"

void digest_to_hex(const uint8_t *d, size_t n, char *hex)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[d[i] >> 4];
		hex[2 * i + 1] = digits[d[i] & 15];
	}
	hex[2 * n] = '\0';
}

void digest_sha256(const void *data, size_t len, uint8_t out[DIGEST_SHA256_SIZE])
{
	struct sha256_ctx ctx;

	sha256_init(&ctx);
	sha256_update(&ctx, len, data);
	sha256_digest(&ctx, DIGEST_SHA256_SIZE, out);
}

void digest_sha256_hex(const void *data, size_t len, char hex[DIGEST_HEX_SIZE])
{
	uint8_t d[DIGEST_SHA256_SIZE];

	digest_sha256(data, len, d);
	digest_to_hex(d, sizeof(d), hex);
}

void digest_sha256_end_hex(struct sha256_ctx *ctx, char hex[DIGEST_HEX_SIZE])
{
	uint8_t d[DIGEST_SHA256_SIZE];

	sha256_digest(ctx, DIGEST_SHA256_SIZE, d);
	digest_to_hex(d, sizeof(d), hex);
}
