// libmunge calls: munge_encode() with a TTL and a UID restriction, munge_decode() with its
// replay cache (munged refuses a credential it decoded before: EMUNGE_CRED_REPLAYED).
#include <munge.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <type_traits>

#include "ddp-check/rendezvous/auth.hpp"

namespace ddp::check::munge {
namespace {

using Context = std::unique_ptr<std::remove_pointer_t<munge_ctx_t>, decltype(&munge_ctx_destroy)>;

Result<Context> context(const std::optional<std::string>& socket) {
  Context ctx(munge_ctx_create(), munge_ctx_destroy);
  if (!ctx) return fail("cannot create a MUNGE context (out of memory)");
  if (socket && munge_ctx_set(ctx.get(), MUNGE_OPT_SOCKET, socket->c_str()) != EMUNGE_SUCCESS)
    return fail("cannot use the MUNGE socket " + *socket);
  return ctx;
}

std::string socket_name(const std::optional<std::string>& socket) {
  return socket ? *socket : std::string("libmunge's default socket");
}

std::string error_text(munge_ctx_t ctx, munge_err_t err) {
  const char* text = munge_ctx_strerror(ctx);
  return text ? text : munge_strerror(err);
}

// Why munge_decode() refused, in words that say what the peer did.
std::string refusal_text(munge_err_t err, munge_ctx_t ctx) {
  switch (err) {
    case EMUNGE_CRED_REPLAYED:
      return "a replayed credential (MUNGE decoded it before)";
    case EMUNGE_CRED_EXPIRED:
      return "an expired credential";
    case EMUNGE_CRED_REWOUND:
      return "a credential from the future (clocks differ between the nodes?)";
    case EMUNGE_CRED_UNAUTHORIZED:
      return "a credential this user may not decode (signed for another uid)";
    default:
      return "an invalid credential (" + error_text(ctx, err) + ")";
  }
}

}  // namespace

Result<std::string> sign(std::string_view payload, std::uint32_t uid, unsigned ttl_s,
                         const std::optional<std::string>& socket) {
  auto ctx = context(socket);
  if (!ctx) return std::unexpected(ctx.error());
  munge_ctx_set(ctx->get(), MUNGE_OPT_TTL, static_cast<int>(ttl_s));
  munge_ctx_set(ctx->get(), MUNGE_OPT_UID_RESTRICTION, static_cast<uid_t>(uid));
  char* cred = nullptr;
  const std::string data(payload);
  munge_err_t err = munge_encode(&cred, ctx->get(), data.data(), static_cast<int>(data.size()));
  if (err != EMUNGE_SUCCESS) {
    std::free(cred);
    return fail("cannot get a MUNGE credential from munged at " + socket_name(socket) + ": " +
                error_text(ctx->get(), err) +
                " (is munged running? Use --munge-socket PATH if it listens elsewhere, or "
                "--auth=none on a cluster without MUNGE)");
  }
  std::string out(cred);
  std::free(cred);
  return out;
}

Result<Credential> decode(std::string_view cred, const std::optional<std::string>& socket) {
  auto ctx = context(socket);
  if (!ctx) return std::unexpected(ctx.error());
  const std::string text(cred);
  void* payload = nullptr;
  int length = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  munge_err_t err = munge_decode(text.c_str(), ctx->get(), &payload, &length, &uid, &gid);
  std::unique_ptr<void, decltype(&std::free)> guard(payload, std::free);
  if (err == EMUNGE_SOCKET || err == EMUNGE_SNAFU || err == EMUNGE_NO_MEMORY) {
    return fail("rank 0 could not ask munged at " + socket_name(socket) + ": " +
                error_text(ctx->get(), err));
  }
  if (err != EMUNGE_SUCCESS) return fail(refusal_text(err, ctx->get()));
  Credential c;
  c.uid = uid;
  c.gid = gid;
  if (payload && length > 0)
    c.payload.assign(static_cast<const char*>(payload), static_cast<std::size_t>(length));
  return c;
}

}  // namespace ddp::check::munge
