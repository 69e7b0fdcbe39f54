import { z } from 'zod';
import { problemCodes } from '../problem';

/** The problem type pages: `/problems` and `/problems/{Code}`. */

export const problemTypePath = z.object({
  Code: z.string().min(1).meta({ description: 'A problem code, the last segment of a problem’s `type`.', example: 'not_found' }),
});

export const problemTypeOut = z
  .object({
    code: z.enum(problemCodes as [string, ...string[]]),
    type: z.string().meta({ description: 'The `type` URI problems of this code carry (this page).' }),
    title: z.string(),
    status: z.number().int().meta({ description: 'The HTTP status answered with this code.' }),
    meaning: z.string(),
    whenAnswered: z.array(z.string()).meta({ description: 'The situations in which the API answers this problem.' }),
    whatToDo: z.string().meta({ description: 'What a client should do about it.' }),
    example: z.record(z.string(), z.unknown()).meta({ description: 'An example application/problem+json body.' }),
  })
  .meta({ id: 'ProblemType', description: 'A description of one problem code, the page a problem’s `type` points to.' });
