#pragma once
/// \file
/// Data-parallel training: everything in tinynet/dist/ (link tinynet::dist).
/// NcclGroup comes with tinynet/dist/nccl_group.hpp in builds linking tinynet::nccl.

#include "tinynet/dist/ddp.hpp"
#include "tinynet/dist/env.hpp"
#include "tinynet/dist/error.hpp"
#include "tinynet/dist/file_store.hpp"
#include "tinynet/dist/gloo_group.hpp"
#include "tinynet/dist/init.hpp"
#include "tinynet/dist/process_group.hpp"
#include "tinynet/dist/store.hpp"
#include "tinynet/dist/tcp_store.hpp"
#include "tinynet/dist/tcp_store_server.hpp"
