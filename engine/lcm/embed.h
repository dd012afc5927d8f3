/*
 * embed.h -- hybrid recall's embeddings client: an OpenAI-compatible `/v1/embeddings`
 * endpoint (Ollama, a llama.cpp server, OpenAI) over llm_http's transport, configured by
 * lcm.json's `embeddings` object (config.h). Owns the endpoint's URL rule, batching, the
 * per-input bound (maxChars), the response's checks (one vector per input, one dimension,
 * the configured one when set), and the vector math every writer and reader shares: float32
 * vectors L2-normalised at write time, so a cosine is a dot product.
 * Safe from any thread (no state beyond the caller's).
 */
#ifndef LC_EMBED_H
#define LC_EMBED_H

#include <stddef.h>

#include "config.h"

/* The full POST URL for a configured `url` (malloc'd): one ending in "/embeddings" is used
 * as given, one ending in "/v1" gets "/embeddings", any other "/v1/embeddings". */
char *embed_url(const char *url);

/* Embed `n` texts (each masked by the redaction unless cfg->send_unmasked, then clipped to
 * cfg->max_chars code points) in requests of cfg->batch inputs. *dim on entry: the
 * dimension the vectors must have (0: any). *out (malloc'd, n x *dim floats, row i for
 * text i) holds unit vectors. A text the model returns as all zeros stays zero (it matches
 * nothing). An answer with a number no float holds (1e400), an index out of range or given
 * twice, or a vector of another dimension is refused whole (LC_ERR, nothing out). Errors
 * name the URL and the server's own sentence (neutralised); LC_INVALID when embeddings are
 * not configured. */
int embed_texts(const lcm_embeddings *cfg, const char *const *texts, size_t n, float **out, int *dim,
                char **err);

/* embed_texts, adding to *tokens (when non-NULL) the input tokens the server's answers
 * report (`usage.prompt_tokens`, else `usage.total_tokens`) and to *requests the requests
 * made: what the cost ledger (ledger.h) records. */
int embed_texts_metered(const lcm_embeddings *cfg, const char *const *texts, size_t n, float **out, int *dim,
                        long *tokens, long *requests, char **err);

/* Scale `v` to unit length (a zero vector stays zero). */
void embed_normalize(float *v, int dim);
/* The dot product, in double for the sum. */
double embed_dot(const float *a, const float *b, int dim);

/* The one sentence every hybrid caller gives when `embeddings` is not configured. */
extern const char embed_not_configured[];

#endif
