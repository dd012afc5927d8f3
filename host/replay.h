/*
 * replay.h -- replay mode: feed a recorded session JSONL through the plugins turn by
 * turn as if it were happening now (every event fired), writing the output session.
 * Keeps the input's ids, parent links and timestamps; plugin entries are appended in
 * between and the branch continues through them; a parent elsewhere is a tree move.
 * Deterministic: plugin entries get ids from a PRNG seeded by the input session id and
 * the timestamp of the input entry being replayed. No model.
 */
#ifndef HOST_REPLAY_H
#define HOST_REPLAY_H

#include "agent.h"

/* The input's header line (malloc'd), used as the header of a new output session. */
int replay_read_header(const char *in_path, char **header, char **err);

/* Make what plugins append from now on deterministic (ids seeded by the session id,
 * timestamps from the input header) -- call before session_start. */
void replay_prepare(session *s, const char *header_line);

/* Replay `in_path` into the agent's open session. Prints a one-line summary to stdout. */
int replay_run(agent *a, const char *in_path, char **err);

#endif
