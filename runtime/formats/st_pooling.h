/* A sentence-transformers folder's pooling (an embedding model saved for
 * that library: modules.json names a Pooling module whose folder holds a
 * config.json of pooling_mode_* flags), as enum mkc_pooling. */
#ifndef MKC_ST_POOLING_H
#define MKC_ST_POOLING_H

/* dir's pooling into *pooling: MKC_POOL_MEAN, CLS or LAST for one of
 * pooling_mode_mean_tokens, _cls_token, _lasttoken; MKC_POOL_UNKNOWN for
 * any other mode or several at once; left as it is when the folder has no
 * Pooling module. 0, or -1 after "mkc: error: FILE: ..." (a file that is not
 * the JSON it should be). */
int mkc_st_pooling_read(const char *dir, int *pooling);

#endif
