// agree_on_failure: see agreed_failure.h.
#include "train/agreed_failure.h"

#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "core/log.h"
#include "io/options.h"  // UsageError

namespace sft {

void agree_on_failure(std::initializer_list<Comm*> groups, bool main_rank,
                      const std::function<void()>& step) {
  bool alone = true;
  for (Comm* g : groups) alone = alone && (g == nullptr || g->size() == 1);
  if (alone) return step();
  std::string error;
  int code = 0;
  try {
    step();
  } catch (const AlreadyReported&) {
    throw;
  } catch (const UsageError& e) {
    error = e.what();
    code = 2;
  } catch (const Error& e) {
    error = e.what();
    code = 1;
  }
  // {rank 0 failed, ranks that failed}, summed over the groups in turn: over all ranks.
  std::vector<int64_t> votes = {code != 0 && main_rank ? 1 : 0, code != 0 ? 1 : 0};
  for (Comm* g : groups)
    if (g) g->all_reduce_sum(std::span<int64_t>(votes));
  if (votes[1] == 0) return;
  if (code != 0 && (main_rank || votes[0] == 0))
    std::fprintf(stderr, "error: %s%s\n", main_rank ? "" : log_rank_prefix().c_str(),
                 error.c_str());
  // Every message is out before any rank leaves (mpirun then ends the others).
  for (Comm* g : groups)
    if (g) g->barrier();
  throw AlreadyReported(code != 0 ? code : 1);
}

}  // namespace sft
