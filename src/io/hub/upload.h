// Publishing a folder (a training run's output_dir) to a Hub repo, as huggingface_hub's
// create_repo + upload_folder do, for --push_to_hub:
//
//   create   POST /api/repos/create {"type","name","organization","private"}; 409 = exists
//   LFS      files that the Hub stores in LFS (weights, *.safetensors, anything >= 10 MiB):
//            POST /{repo}.git/info/lfs/objects/batch (operation "upload", basic transfer)
//            names the objects the Hub lacks; each is PUT to its upload href, then its
//            verify href is POSTed {"oid","size"}
//   commit   POST /api/{models|datasets}/{repo}/commit/{revision}, application/x-ndjson: a
//            header line {"summary"}, then "file" lines (small files, base64) and "lfsFile"
//            lines ({"path","algo":"sha256","oid","size"})
// Hidden files and checkpoint-*/ folders are not published (transformers' Trainer skips them
// too). Requests go through send_with_retries (download_file.h); errors through errors.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "io/hub/download_file.h"

namespace sft::hub {

struct UploadOptions {
  std::string repo_id;  // "ORG/NAME"
  bool private_repo = false;
  std::string revision = "main";
  std::string commit_message = "Upload folder using sft";
  std::optional<std::string> token;  // else HF_TOKEN / the token file (endpoints.h)
  std::vector<std::string> files;    // relative paths to publish; empty: files_to_publish()
  RetryPolicy retry;
};

struct UploadResult {
  std::string commit;  // the Hub's commitOid
  size_t files = 0;
  size_t lfs_files = 0;
  size_t lfs_uploaded = 0;  // LFS objects the Hub did not have yet
};

UploadResult push_folder(const std::string& folder, const UploadOptions& options);

// Which files of `folder` push_folder publishes (relative, '/'-separated, sorted).
std::vector<std::string> files_to_publish(const std::string& folder);
// The model files of a checkpoint folder (config, weights, tokenizer; not the optimizer or
// the trainer's resume state), what transformers pushes at each save.
std::vector<std::string> checkpoint_model_files(const std::string& checkpoint);

}  // namespace sft::hub
