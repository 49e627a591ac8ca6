/*
 * JSON text that is always UTF-8, whatever bytes its strings were made
 * of (json-c writes a string's bytes as they are).
 */
#ifndef TOOLRUN_JSONTEXT_H
#define TOOLRUN_JSONTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

/* A JSON string of the bytes: each byte that does not begin a valid
 * UTF-8 sequence becomes U+FFFD. NULL when out of memory. */
struct json_object *json_text(const uint8_t *s, size_t len);

/* o as one line of JSON (plain, "/" not escaped), without its newline,
 * with U+FFFD for each byte of its strings that begins no valid UTF-8
 * sequence: what toolrun writes for a program to parse (toolrun mcp,
 * tags --json, session --json) passes any JSON parser. malloc's, its
 * length in *len; NULL when out of memory. */
char *json_line(struct json_object *o, size_t *len);
/* json_line(o) and a newline, on f; false when memory ran out. */
bool json_print_line(struct json_object *o, FILE *f);

#endif
