/* sentence-transformers' pooling (st_pooling.h). */
#include "st_pooling.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/model_desc.h"
#include "util/files.h"

/* path's JSON (NULL when the file is absent: *absent set), or NULL after a message. */
static cJSON *read_json(const char *path, int *absent) {
  size_t len;
  char *text = mkc_read_file(path, &len);
  *absent = !text && errno == ENOENT;
  if (!text) {
    if (!*absent) mkc_error_in(path, "cannot read: %s", strerror(errno));
    return NULL;
  }
  cJSON *root = cJSON_ParseWithLength(text, len);
  free(text);
  if (!root) mkc_error_in(path, "not valid JSON");
  return root;
}

/* The Pooling module's folder from modules.json ("1_Pooling" where there is
 * no modules.json), into out. 0, 1 when the folder has no Pooling module, -1
 * after a message. */
static int pooling_dir(const char *dir, char *out, size_t cap) {
  char path[4200];
  int absent;
  snprintf(path, sizeof path, "%s/modules.json", dir);
  cJSON *mods = read_json(path, &absent);
  if (!mods) {
    snprintf(out, cap, "%s/1_Pooling", dir);
    return absent ? 0 : -1;
  }
  int rc = 1;
  const cJSON *m;
  cJSON_ArrayForEach(m, mods) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(m, "type"),
                *at = cJSON_GetObjectItemCaseSensitive(m, "path");
    if (!cJSON_IsString(type) || !strstr(type->valuestring, "models.Pooling")) continue;
    if (!cJSON_IsString(at) || strstr(at->valuestring, "..")) {
      rc = mkc_error_in(path, "the Pooling module's \"path\" is not a folder name in the model's");
      break;
    }
    snprintf(out, cap, "%s/%s", dir, at->valuestring);
    rc = 0;
    break;
  }
  cJSON_Delete(mods);
  return rc;
}

int mkc_st_pooling_read(const char *dir, int *pooling) {
  char folder[4400], path[4500];
  int rc = pooling_dir(dir, folder, sizeof folder), absent;
  if (rc) return rc < 0 ? -1 : 0;
  snprintf(path, sizeof path, "%s/config.json", folder);
  cJSON *cfg = read_json(path, &absent);
  if (!cfg) return absent ? 0 : -1;
  static const struct {
    const char *key;
    int pooling;
  } MODES[] = {{"pooling_mode_mean_tokens", MKC_POOL_MEAN},
               {"pooling_mode_cls_token", MKC_POOL_CLS},
               {"pooling_mode_lasttoken", MKC_POOL_LAST},
               {"pooling_mode_max_tokens", MKC_POOL_UNKNOWN},
               {"pooling_mode_mean_sqrt_len_tokens", MKC_POOL_UNKNOWN},
               {"pooling_mode_weightedmean_tokens", MKC_POOL_UNKNOWN}};
  int found = MKC_POOL_UNSET, count = 0;
  for (size_t k = 0; k < sizeof MODES / sizeof *MODES; k++)
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, MODES[k].key)))
      found = MODES[k].pooling, count++;
  cJSON_Delete(cfg);
  if (count) *pooling = count == 1 ? found : MKC_POOL_UNKNOWN;
  return 0;
}
