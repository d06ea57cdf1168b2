/**
 * Colours of the cluster graph, shared by the drawing and its legend (which
 * draws without loading Cytoscape). Chosen to stay apart for the common
 * forms of colour blindness; shape tells VPAs (circles) from urls (squares).
 */
import { RISK_CATEGORIES, SOURCE_CATEGORIES } from '../../../src/vpa/categories.js';

export const RISK_COLOURS: Readonly<Record<(typeof RISK_CATEGORIES)[number], string>> = {
  mule: '#b2182b',
  gambling: '#e08214',
  phishing: '#7b3294',
  scam: '#d6604d',
  nbfc_impersonation: '#2166ac',
};

export const SOURCE_COLOURS: Readonly<Record<(typeof SOURCE_CATEGORIES)[number], string>> = {
  gambling: '#8c6d31',
  phishing: '#5e3c99',
  scam: '#636363',
  telegram: '#1b9e77',
};

/** For a category this console does not know yet. */
export const UNKNOWN_COLOUR = '#888888';

export function riskColour(category: string | null): string {
  return category === null ? UNKNOWN_COLOUR : ((RISK_COLOURS as Readonly<Record<string, string>>)[category] ?? UNKNOWN_COLOUR);
}

export function sourceColour(category: string): string {
  return (SOURCE_COLOURS as Readonly<Record<string, string>>)[category] ?? UNKNOWN_COLOUR;
}
