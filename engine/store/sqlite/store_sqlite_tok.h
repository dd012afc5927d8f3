/*
 * store_sqlite_tok.h -- what a word is in the SQLite full-text index: the FTS5 tokenizer
 * "lcm" and its wrapper "lcm_forms" (messages_fts and summaries_fts are declared
 * tokenize='lcm_forms porter lcm') and the index's
 * auxiliary function lcm_cols(). A connection that reads or writes those tables must have
 * them registered first (store_sqlite_tok_register; every store open does it).
 *
 * "lcm" splits as FTS5's unicode61 does (remove_diacritics 2: case and diacritics folded,
 * every character that is not a letter, digit or private-use one separates words), then
 * cuts each word at the edges between CJK characters (Han, kana, Hangul) and the others,
 * and makes a CJK run of two characters or more overlapping bigrams ("现在删除" -> 现在 在删
 * 删除), one character a unigram. So `现在删除NotificationBell的导入` holds the word
 * "notificationbell", and a CJK word of two characters or more found in a query (a phrase
 * of its bigrams) matches wherever it is written. FTS5's porter, wrapped around it, stems
 * the ASCII words ("identically" and "identical" share one stem). The tables are declared
 * 'lcm_forms porter lcm': "lcm_forms" adds, beside a stem that is not its word, the word as
 * written (folded), marked with STORE_EXACT_MARK (store.h), at the same position; a query
 * phrase starting with the mark is looked up that way, so recall can rank the form a query
 * wrote above the word's other forms.
 *
 * lcm_cols(<fts table>) is, for a row of a MATCH, the bit mask of the columns that hold a
 * matched phrase (bit 0 the first column), read from the index's position lists (it works
 * on a contentless table).
 */
#ifndef LC_STORE_SQLITE_TOK_H
#define LC_STORE_SQLITE_TOK_H

#include <sqlite3.h>

/* Register the tokenizers "lcm" and "lcm_forms" and the function lcm_cols() on `db`. LC_OK, or LC_ERR
 * with *err set (FTS5 missing from the library). */
int store_sqlite_tok_register(sqlite3 *db, char **err);

#endif
