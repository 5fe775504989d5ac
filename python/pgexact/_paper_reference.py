"""Reference numbers for ``pgexact-bench paper``, from the PGI² paper's authors' public results.

Source: https://github.com/rapicki/prediction-gap at commit 31af1fc (the code and raw results
behind Gajewski, Karczmarz, Rapicki, Sankowski, "Accurate Estimation of Feature Importance
Faithfulness for Tree Models", AAAI 2025, arXiv:2404.03426).  The published Tables 1-9 and
Figures 3-6 themselves could not be read here; these numbers are what the authors' committed
raw files give, summarised by us:

``accuracy``  from ``results/<model>/precision_comparision_std_<s>_iterations_<k>.npy`` (about
    20,000 random (row, S) pairs each; columns MC, exact, QMC, |S|, t_MC, t_exact, t_QMC):
    NMAE of MC (and QMC) against their exact value, the mean exact time per pair, and the
    iteration count at which MC takes as long as exact (linear interpolation of t_MC in k;
    ``extrapolated`` when that count lies outside their grid 100..35,000, where the NMAE is
    extrapolated with the 1/sqrt(k) law).  ``negative_exact``: pairs where their exact value was
    below zero (floating-point cancellation in their implementation).
``entropy``   ``results/<model>/<data>_entropy.csv`` as is (bits), rounded to 3 decimals.
``pgi2_ratio``  mean PGI² of the greedy ranking at sigma over mean PGI² of SHAP's ranking, per
    evaluation sigma', from the per-row ``pgi_std_<s'>_mean.npy`` files (results/ for housing,
    new_results_mr/ for the single wine tree; the wine Bigger files hold 3 numbers whose meaning
    we could not establish, so that model has no entry).

Their models (not ours): single = 1 tree with 8 leaves; wine Bigger = 32 trees / 453 leaves;
housing Bigger = 40 trees / 525 leaves.  Their housing target is in dollars, wine in points.
"""

MODELS = {
    "wine/single": "1 tree, 8 leaves",
    "wine/bigger": "32 trees, 453 leaves",
    "housing/single": "1 tree, 8 leaves",
    "housing/bigger": "40 trees, 525 leaves",
}

SOURCE = "github.com/rapicki/prediction-gap@31af1fc (authors' raw results, summarised by pgexact)"

REFERENCE = {
    "accuracy": {
        "housing/bigger": {
            "0.01": {
                "time_exact_s": 0.02099,
                "matched_iterations": 1027,
                "extrapolated": False,
                "nmae_mc": 0.0368,
                "nmae_qmc": 0.00513,
                "nmae_mc_at": {
                    "100": 0.116,
                    "1000": 0.0373,
                    "10000": 0.0117
                },
                "negative_exact": 1436
            },
            "0.03": {
                "time_exact_s": 0.026713,
                "matched_iterations": 1628,
                "extrapolated": False,
                "nmae_mc": 0.0294,
                "nmae_qmc": 0.00412,
                "nmae_mc_at": {
                    "100": 0.1181,
                    "1000": 0.0373,
                    "10000": 0.0117
                },
                "negative_exact": 358
            },
            "0.1": {
                "time_exact_s": 0.059508,
                "matched_iterations": 3665,
                "extrapolated": False,
                "nmae_mc": 0.0186,
                "nmae_qmc": 0.00212,
                "nmae_mc_at": {
                    "100": 0.1131,
                    "1000": 0.0355,
                    "10000": 0.0114
                },
                "negative_exact": 76
            },
            "0.3": {
                "time_exact_s": 0.155729,
                "matched_iterations": 9673,
                "extrapolated": False,
                "nmae_mc": 0.0113,
                "nmae_qmc": 0.00101,
                "nmae_mc_at": {
                    "100": 0.1118,
                    "1000": 0.0356,
                    "10000": 0.0111
                },
                "negative_exact": 16
            },
            "1.0": {
                "time_exact_s": 0.226408,
                "matched_iterations": 14024,
                "extrapolated": False,
                "nmae_mc": 0.0099,
                "nmae_qmc": 0.00065,
                "nmae_mc_at": {
                    "100": 0.1172,
                    "1000": 0.0372,
                    "10000": 0.0117
                },
                "negative_exact": 1
            }
        },
        "housing/single": {
            "0.01": {
                "time_exact_s": 0.000353,
                "matched_iterations": 6,
                "extrapolated": True,
                "nmae_mc": 0.5534,
                "nmae_qmc": 0.15973,
                "nmae_mc_at": {
                    "100": 0.136,
                    "1000": 0.046,
                    "10000": 0.0147
                },
                "negative_exact": 0
            },
            "0.03": {
                "time_exact_s": 0.000388,
                "matched_iterations": 13,
                "extrapolated": True,
                "nmae_mc": 0.4221,
                "nmae_qmc": 0.12851,
                "nmae_mc_at": {
                    "100": 0.1531,
                    "1000": 0.0478,
                    "10000": 0.0157
                },
                "negative_exact": 0
            },
            "0.1": {
                "time_exact_s": 0.000433,
                "matched_iterations": 12,
                "extrapolated": True,
                "nmae_mc": 0.4645,
                "nmae_qmc": 0.14991,
                "nmae_mc_at": {
                    "100": 0.1578,
                    "1000": 0.0518,
                    "10000": 0.0163
                },
                "negative_exact": 0
            },
            "0.3": {
                "time_exact_s": 0.000453,
                "matched_iterations": 17,
                "extrapolated": True,
                "nmae_mc": 0.3428,
                "nmae_qmc": 0.1059,
                "nmae_mc_at": {
                    "100": 0.14,
                    "1000": 0.0452,
                    "10000": 0.0143
                },
                "negative_exact": 6
            },
            "1.0": {
                "time_exact_s": 0.000471,
                "matched_iterations": 21,
                "extrapolated": True,
                "nmae_mc": 0.2833,
                "nmae_qmc": 0.10744,
                "nmae_mc_at": {
                    "100": 0.1294,
                    "1000": 0.0416,
                    "10000": 0.0131
                },
                "negative_exact": 0
            }
        },
        "wine/bigger": {
            "0.01": {
                "time_exact_s": 0.015265,
                "matched_iterations": 893,
                "extrapolated": False,
                "nmae_mc": 0.0273,
                "nmae_qmc": 0.00318,
                "nmae_mc_at": {
                    "100": 0.0828,
                    "1000": 0.0258,
                    "10000": 0.0084
                },
                "negative_exact": 3916
            },
            "0.03": {
                "time_exact_s": 0.017303,
                "matched_iterations": 1143,
                "extrapolated": False,
                "nmae_mc": 0.0309,
                "nmae_qmc": 0.00504,
                "nmae_mc_at": {
                    "100": 0.1071,
                    "1000": 0.033,
                    "10000": 0.0107
                },
                "negative_exact": 1184
            },
            "0.1": {
                "time_exact_s": 0.035645,
                "matched_iterations": 2381,
                "extrapolated": False,
                "nmae_mc": 0.0248,
                "nmae_qmc": 0.00414,
                "nmae_mc_at": {
                    "100": 0.1201,
                    "1000": 0.0385,
                    "10000": 0.0122
                },
                "negative_exact": 211
            },
            "0.3": {
                "time_exact_s": 0.107909,
                "matched_iterations": 7253,
                "extrapolated": False,
                "nmae_mc": 0.0143,
                "nmae_qmc": 0.00223,
                "nmae_mc_at": {
                    "100": 0.1207,
                    "1000": 0.0385,
                    "10000": 0.0121
                },
                "negative_exact": 30
            },
            "1.0": {
                "time_exact_s": 0.201716,
                "matched_iterations": 13437,
                "extrapolated": False,
                "nmae_mc": 0.0099,
                "nmae_qmc": 0.00143,
                "nmae_mc_at": {
                    "100": 0.1126,
                    "1000": 0.0359,
                    "10000": 0.0116
                },
                "negative_exact": 0
            }
        },
        "wine/single": {
            "0.01": {
                "time_exact_s": 0.000465,
                "matched_iterations": 31,
                "extrapolated": True,
                "nmae_mc": 0.1365,
                "nmae_qmc": 0.0227,
                "nmae_mc_at": {
                    "100": 0.0759,
                    "1000": 0.023,
                    "10000": 0.0076
                },
                "negative_exact": 0
            },
            "0.03": {
                "time_exact_s": 0.000479,
                "matched_iterations": 27,
                "extrapolated": True,
                "nmae_mc": 0.2101,
                "nmae_qmc": 0.04886,
                "nmae_mc_at": {
                    "100": 0.1087,
                    "1000": 0.0338,
                    "10000": 0.0106
                },
                "negative_exact": 0
            },
            "0.1": {
                "time_exact_s": 0.000489,
                "matched_iterations": 39,
                "extrapolated": True,
                "nmae_mc": 0.2131,
                "nmae_qmc": 0.06431,
                "nmae_mc_at": {
                    "100": 0.1323,
                    "1000": 0.0432,
                    "10000": 0.0135
                },
                "negative_exact": 0
            },
            "0.3": {
                "time_exact_s": 0.000531,
                "matched_iterations": 42,
                "extrapolated": True,
                "nmae_mc": 0.2103,
                "nmae_qmc": 0.07619,
                "nmae_mc_at": {
                    "100": 0.1364,
                    "1000": 0.0429,
                    "10000": 0.0136
                },
                "negative_exact": 0
            },
            "1.0": {
                "time_exact_s": 0.00053,
                "matched_iterations": 37,
                "extrapolated": True,
                "nmae_mc": 0.2005,
                "nmae_qmc": 0.08886,
                "nmae_mc_at": {
                    "100": 0.1223,
                    "1000": 0.0376,
                    "10000": 0.0119
                },
                "negative_exact": 0
            }
        }
    },
    "entropy": {
        "wine/single": {
            "SHAP": {
                "geom": 2.054,
                "top1": 0.962,
                "top2": 1.058,
                "top3": 1.585
            },
            "PG σ=0.1": {
                "geom": 2.503,
                "top1": 1.669,
                "top2": 1.924,
                "top3": 2.172
            },
            "PG σ=0.3": {
                "geom": 2.324,
                "top1": 1.372,
                "top2": 1.71,
                "top3": 2.0
            },
            "PG σ=1": {
                "geom": 2.317,
                "top1": 1.305,
                "top2": 1.585,
                "top3": 2.012
            }
        },
        "wine/bigger": {
            "SHAP": {
                "geom": 2.666,
                "top1": 1.883,
                "top2": 2.313,
                "top3": 2.651
            },
            "PG σ=0.1": {
                "geom": 3.289,
                "top1": 3.069,
                "top2": 3.229,
                "top3": 3.297
            },
            "PG σ=0.3": {
                "geom": 3.129,
                "top1": 2.708,
                "top2": 2.969,
                "top3": 3.161
            },
            "PG σ=1": {
                "geom": 2.74,
                "top1": 1.73,
                "top2": 2.402,
                "top3": 2.846
            }
        },
        "housing/single": {
            "SHAP": {
                "geom": 2.094,
                "top1": 1.077,
                "top2": 1.549,
                "top3": 1.585
            },
            "PG σ=0.1": {
                "geom": 2.333,
                "top1": 1.205,
                "top2": 1.936,
                "top3": 2.232
            },
            "PG σ=0.3": {
                "geom": 2.23,
                "top1": 0.776,
                "top2": 1.77,
                "top3": 2.178
            },
            "PG σ=1": {
                "geom": 2.138,
                "top1": 0.031,
                "top2": 1.634,
                "top3": 2.067
            }
        },
        "housing/bigger": {
            "SHAP": {
                "geom": 2.57,
                "top1": 1.748,
                "top2": 2.394,
                "top3": 2.634
            },
            "PG σ=0.1": {
                "geom": 2.774,
                "top1": 2.324,
                "top2": 2.652,
                "top3": 2.835
            },
            "PG σ=0.3": {
                "geom": 2.624,
                "top1": 1.979,
                "top2": 2.376,
                "top3": 2.676
            },
            "PG σ=1": {
                "geom": 2.383,
                "top1": 0.534,
                "top2": 2.176,
                "top3": 2.622
            }
        }
    },
    "pgi2_ratio": {
        "housing/single": {
            "PG σ=0.1": {
                "0.01": 1.049,
                "0.03": 1.064,
                "0.1": 1.221,
                "0.3": 1.113,
                "1.0": 1.06
            },
            "PG σ=0.3": {
                "0.01": 1.035,
                "0.03": 1.058,
                "0.1": 1.221,
                "0.3": 1.124,
                "1.0": 1.09
            },
            "PG σ=1": {
                "0.01": 1.001,
                "0.03": 1.045,
                "0.1": 1.221,
                "0.3": 1.124,
                "1.0": 1.091
            }
        },
        "housing/bigger": {
            "PG σ=0.1": {
                "0.01": 1.282,
                "0.03": 1.388,
                "0.1": 1.256,
                "0.3": 1.073,
                "1.0": 0.892
            },
            "PG σ=0.3": {
                "0.01": 1.117,
                "0.03": 1.221,
                "0.1": 1.148,
                "0.3": 1.137,
                "1.0": 1.059
            },
            "PG σ=1": {
                "0.01": 0.919,
                "0.03": 0.99,
                "0.1": 0.916,
                "0.3": 1.041,
                "1.0": 1.118
            }
        },
        "wine/single": {
            "PG σ=0.1": {
                "0.01": 1.023,
                "0.03": 1.031,
                "0.1": 1.077,
                "0.3": 1.095,
                "1.0": 1.027
            },
            "PG σ=0.3": {
                "0.01": 1.019,
                "0.03": 1.026,
                "0.1": 1.072,
                "0.3": 1.102,
                "1.0": 1.085
            },
            "PG σ=1": {
                "0.01": 1.02,
                "0.03": 1.025,
                "0.1": 1.055,
                "0.3": 1.082,
                "1.0": 1.102
            }
        }
    }
}
