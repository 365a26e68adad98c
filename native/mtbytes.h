/* The bytes of Python's random.Random (MT19937) in C: the twin of uet/native/_twin.py randbytes,
 * which makes the seeded data of uet sim / uet demo / uet send --bytes (uet/payload.py). */
#ifndef UET_MTBYTES_H
#define UET_MTBYTES_H

#include <stddef.h>
#include <stdint.h>

/* MT19937's 624 state words, then the index of the next word to temper (0..624): what
 * random.Random.getstate()[1] holds. */
#define UET_MT_WORDS 624
#define UET_MT_STATE (UET_MT_WORDS + 1)
#define UET_MT_BAD_STATE (-1)

/* Writes the next n bytes of the generator into out, as random.Random.randbytes(n) makes them
 * (getrandbits(8 n).to_bytes(n, "little"): whole 32-bit words little-endian, then the top
 * n % 4 bytes of one more word), and leaves state where that call leaves it. Returns 0, or
 * UET_MT_BAD_STATE (nothing written) when the index is above 624. */
int uet_mt_bytes(uint32_t *state, char *out, size_t n);

#endif
