/*
 * JSON strings of bytes that may not be UTF-8 (json-c).
 */
#ifndef TOOLRUN_JSONTEXT_H
#define TOOLRUN_JSONTEXT_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/* A JSON string of the bytes: each byte that does not begin a valid
 * UTF-8 sequence becomes U+FFFD. NULL when out of memory. */
struct json_object *json_text(const uint8_t *s, size_t len);

#endif
