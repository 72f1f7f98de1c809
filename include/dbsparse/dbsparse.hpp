#pragma once
// The whole public API. Users include this (or the single headers it lists).
#include "dbsparse/context.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/features.hpp"
#include "dbsparse/generators.hpp"
#include "dbsparse/io.hpp"
#include "dbsparse/matrix.hpp"
#include "dbsparse/plan_info.hpp"
#include "dbsparse/reference.hpp"
#include "dbsparse/spmspv.hpp"
#include "dbsparse/spmv.hpp"
#include "dbsparse/tuning_db.hpp"
