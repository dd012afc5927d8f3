/*
 * store_sqlite_file.h -- a SQLite database file of ours outside a connection: its private
 * folder and mode, and a look at its header. Private to the SQLite backend
 * (store_sqlite*.c); store_file_damaged, the public face, is declared in store.h.
 *
 * The rule these functions keep: in this process, only SQLite holds a readable or
 * writable descriptor of a database file. POSIX locks belong to the process and the
 * inode, and closing ANY descriptor of the file releases every one of them, SQLite's
 * included ("How To Corrupt An SQLite Database File", section 2.2): one open()/close()
 * of a store that a worker thread or the host thread has open lets another process write
 * under the live connection's feet. So the checks here hold only O_PATH descriptors (whose
 * close releases nothing) and read bytes through a SQLite connection of their own, whose
 * close SQLite itself defers while another connection of the process holds a lock.
 */
#ifndef LC_STORE_SQLITE_FILE_H
#define LC_STORE_SQLITE_FILE_H

#include <sys/types.h>

/* Make (or check) the folder DIR (0700) and the file DIR/NAME (0600) without following a
 * link at either, and without opening the file for reading or writing while it may exist.
 * WHAT names the file in messages ("store", "home store"). CREATE: make a missing file
 * (and folder); otherwise a missing file is LC_NOTFOUND and nothing is made. *dir_was and
 * *file_was (either may be NULL) get the modes found, for the note that reports a fix.
 * A link, a non-regular file or a file with a second name is refused (LC_INVALID). */
int store_sqlite_file_private(const char *dir, const char *name, const char *what, int create,
                              mode_t *dir_was, mode_t *file_was, char **err);

#endif
